"""The respondent page (/respond/ID) in headless Chromium against a running collector: a respondent
types her values, reviews and sends; what the browser POSTs (read from Chrome's network log, not
from the page) holds only the cell, and the stored row has Python's cell; invitations redeemed for
blind tokens on the page (issue 40.3); a digest mismatch in the invitation link; no external resource and no console error under the
server's Content-Security-Policy."""

import base64
import hashlib
import json
import re
import secrets

import numpy as np
import pytest
import sqlalchemy as sa
from service_support import (
    ANSWERS,
    RewritingProxy,
    call,
    chromium,
    design_spec,
    population,
    survey_body,
)

from probanon.service import db
from probanon.service.app import HEADERS
from probanon.survey.spec import assign, digest, verify

By = pytest.importorskip("selenium.webdriver.common.by").By
Keys = pytest.importorskip("selenium.webdriver.common.keys").Keys
WebDriverWait = pytest.importorskip("selenium.webdriver.support.ui").WebDriverWait

TIMEOUT = 20  # seconds, for every wait on the page
KEYS = {"digest", "cell", "answers", "idempotency_key"}
CSP = dict(HEADERS)[b"content-security-policy"].decode()
QUESTIONS = survey_body("")["questions"]
QI_LABELS = [f"{QUESTIONS[c]['label']} ({QUESTIONS[c]['unit']})" for c in ("age", "income")]
ANSWER_LABELS = {a["name"]: a.get("label", a["name"]) + ("" if a.get("required", True) else " (optional)")
                 for a in ANSWERS}
TOKEN_LABEL = "Invitation code (printed in your invitation)"


@pytest.fixture(scope="module")
def browser():
    yield from chromium({"browser": "ALL", "performance": "ALL"})


@pytest.fixture
def page(browser):
    """The browser on a blank page, its console and network logs emptied."""
    browser.get("about:blank")
    browser.get_log("browser")
    browser.get_log("performance")
    return browser


@pytest.fixture(scope="module")
def published():
    """(population, specification text, specification) of the surveys below."""
    frame = population()
    _, text = design_spec(frame)
    return frame, text, json.loads(text)


def publish(collector, text, **changes) -> dict:
    base, admin, _ = collector
    status, body = call(base, "POST", "/api/admin/surveys", survey_body(text, **changes), token=admin)
    assert status == 201, body
    return body


def stored(database_url, survey_id) -> dict:
    """{key hash: (cell, answers)} of the survey's rows, read from the database."""
    engine = db.connect(database_url)
    try:
        with engine.connect() as conn:
            t = db.submissions.c
            rows = conn.execute(sa.select(t.key_hash, t.cell, t.answers).where(t.survey_id == survey_id)).all()
    finally:
        engine.dispose()
    return {r.key_hash: (r.cell, json.loads(r.answers)) for r in rows}


def network(driver) -> tuple[list, list]:
    """(Network.requestWillBeSent, Network.responseReceived) parameters from Chrome's log since the
    last call (reading empties the log)."""
    events = [json.loads(e["message"])["message"] for e in driver.get_log("performance")]
    return ([e["params"] for e in events if e["method"] == "Network.requestWillBeSent"],
            [e["params"]["response"] for e in events if e["method"] == "Network.responseReceived"])


def posted(driver) -> list[str]:
    """The bodies of the POST requests since the last read of the log, as the browser sent them."""
    bodies = []
    for e in network(driver)[0]:
        if e["request"]["method"] == "POST":
            body = e["request"].get("postData")
            if body is None:  # not inlined in the event: ask the browser
                body = driver.execute_cdp_cmd("Network.getRequestPostData", {"requestId": e["requestId"]})["postData"]
            bodies.append(body)
    return bodies


def open_survey(driver, base, survey_id, query=None):
    """The page of the survey; ``query`` None: the address of the letter (with ``?digest=``)."""
    if query is None:
        query = "?digest=" + call(base, "GET", f"/api/surveys/{survey_id}")[1]["digest"]
    driver.get(f"{base}/respond/{survey_id}{query}")
    WebDriverWait(driver, TIMEOUT).until(lambda d: d.find_element(By.ID, "survey-form").is_displayed()
                                         or d.find_element(By.ID, "error").is_displayed()
                                         or d.find_element(By.ID, "invitation").is_displayed())


def labelled(driver, label_text):
    """The control that the <label for> with exactly this text names."""
    assert '"' not in label_text
    [label] = driver.find_elements(By.XPATH, f'//label[normalize-space(.)="{label_text}"]')
    return driver.find_element(By.ID, label.get_attribute("for"))


def type_in(driver, label_text, text, replace=False):
    el = labelled(driver, label_text)
    if replace:
        el.send_keys(Keys.CONTROL, "a", Keys.NULL, Keys.BACKSPACE)
    el.send_keys(text)  # a <select>: typing the option's text chooses it


def fill(driver, qi_texts, answers):
    for label, text in zip(QI_LABELS, qi_texts):
        type_in(driver, label, text)
    for name, label in ANSWER_LABELS.items():
        if name in answers:
            type_in(driver, label, str(answers[name]))


def review_and_send(driver) -> tuple[str, str]:
    """(the message shown at review, the page's result line) after Review and Send, by keyboard."""
    driver.find_element(By.ID, "review").send_keys(Keys.ENTER)
    WebDriverWait(driver, TIMEOUT).until(lambda d: d.find_element(By.ID, "review-section").is_displayed())
    shown = driver.find_element(By.ID, "payload").text
    driver.find_element(By.ID, "send").send_keys(Keys.ENTER)
    result = driver.find_element(By.ID, "result")
    WebDriverWait(driver, TIMEOUT).until(lambda d: result.text not in ("", "Sending…"))
    return shown, result.text


def respondents(frame, spec):
    """Five respondents (typed values, answers): two population records, one of them the boundary
    tuple of its ball, exactly at its radius (the tie rule decides), and three other points.
    Incomes are typed with a decimal point: such text cannot occur in a hex digest or a key."""
    function = verify(spec).function
    X = frame.to_numpy(float)
    Z = function.standardizer.transform(X)
    on_boundary = (Z[:, None, :] == function.rule.boundary[None]).all(axis=2)
    i, ball = map(int, np.argwhere(on_boundary)[0])
    assert ((Z[i] - function.rule.references[ball]) ** 2).sum() == function.rule.radius2[ball]  # a tie
    j = int(np.flatnonzero(~on_boundary.any(axis=1))[0])

    def typed(x):
        return repr(float(x))  # shortest text that reads back as the same double

    return [((typed(X[i, 0]), typed(X[i, 1])), {"happy": 0, "spending": 1250.75, "region": "north"}),
            ((typed(X[j, 0]), typed(X[j, 1])), {"happy": 10, "region": "south"}),
            (("18", "0.01"), {"happy": 5, "spending": 0, "region": "north"}),
            (("90", "9999.99"), {"happy": 3, "spending": 80, "region": "south"}),
            (("44.5", "3000.25"), {"happy": 7, "spending": 12.5, "region": "north"})]


def test_respondents_send_only_their_cell(collector, page, published):
    base, _, database_url = collector
    frame, text, spec = published
    survey = publish(collector, text)
    people = respondents(frame, spec)
    cells, _ = assign(spec, [[float(a), float(b)] for (a, b), _ in people])
    sent = []
    for (qi_texts, answers), cell in zip(people, cells):
        open_survey(page, base, survey["id"])
        fill(page, qi_texts, answers)
        shown, result = review_and_send(page)
        assert result == "Thank you: your answers were stored."
        [raw] = posted(page)
        assert raw == shown  # the reviewed message, byte for byte
        body = json.loads(raw)
        assert set(body) == KEYS
        assert body["digest"] == survey["digest"] and body["cell"] == int(cell) and body["answers"] == answers
        assert re.fullmatch(r"[A-Za-z0-9_-]{22,64}", body["idempotency_key"])
        numbers = {v for v in body["answers"].values() if not isinstance(v, str)} | {body["cell"]}
        assert qi_texts[1] not in raw and float(qi_texts[1]) not in numbers
        sent.append(body)
    rows = stored(database_url, survey["id"])
    assert rows == {hashlib.sha256(b["idempotency_key"].encode()).hexdigest(): (b["cell"], b["answers"]) for b in sent}
    assert sorted(c for c, _ in rows.values()) == sorted(int(c) for c in cells)


def use_code(driver, code) -> str:
    """The invitation step: type the code, choose "Use my invitation code"; the step's message."""
    type_in(driver, TOKEN_LABEL, code, replace=True)
    driver.find_element(By.ID, "redeem").send_keys(Keys.ENTER)
    result = driver.find_element(By.ID, "invitation-result")
    WebDriverWait(driver, TIMEOUT).until(lambda d: result.text not in ("", "Exchanging your invitation code…"))
    return result.text


def issuance(base, survey_id, code, blinded_msg: str):
    return call(base, "POST", f"/api/surveys/{survey_id}/issuance", {"code": code, "blinded_msg": blinded_msg})


def verify_token(description, token) -> bytes:
    """The nonce of a submission's token whose signature verifies over the survey's token input
    (RFC 9578 §5.1, the contract's layout), checked with ``cryptography`` alone."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding

    issuer = description["issuer"]
    assert issuer["algorithm"] == "RSABSSA-SHA384-PSS-Deterministic"
    der = unb64url(issuer["public_key"])
    assert hashlib.sha256(der).hexdigest() == issuer["key_id"]
    nonce, signature = unb64url(token["nonce"]), unb64url(token["signature"])
    assert len(nonce) == 32 and len(signature) == 256
    message = (b"\x00\x02" + nonce + hashlib.sha256(("probanon/1 " + description["digest"]).encode()).digest()
               + hashlib.sha256(der).digest())
    serialization.load_der_public_key(der).verify(
        signature, message, padding.PSS(mgf=padding.MGF1(hashes.SHA384()), salt_length=48), hashes.SHA384())
    return nonce


def unb64url(text: str) -> bytes:
    assert re.fullmatch(r"[A-Za-z0-9_-]*", text)
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def stored_with_submissions(database_url) -> str:
    """Every value of the submissions and of the spent tokens, as text (for what must not be in them)."""
    engine = db.connect(database_url)
    try:
        with engine.connect() as conn:
            tables = [t for t in db.metadata.sorted_tables if t.name == "submissions" or "spent" in t.name]
            assert len(tables) == 2, [t.name for t in tables]
            return repr([conn.execute(sa.select(t)).all() for t in tables])
    finally:
        engine.dispose()


def test_blind_token(collector, page, published):
    """Issue 40.3 in the browser: the page redeems the invitation code first (a blinded message for
    a blind signature), finalizes the token on the device, and the submission carries only
    {"nonce", "signature"}; the collector cannot match it to the code, which cannot be redeemed again."""
    base, admin, database_url = collector
    frame, text, spec = published
    survey = publish(collector, text, requires_token=True)
    sid = survey["id"]
    status, description = call(base, "GET", f"/api/surveys/{sid}")
    assert status == 200 and description["requires_token"] and description["issuer"]
    status, body = call(base, "POST", f"/api/admin/surveys/{sid}/tokens", {"count": 2}, token=admin)
    assert status == 200
    code, other_code = body["tokens"]
    qi_texts, answers = respondents(frame, spec)[4]
    [cell], _ = assign(spec, [[float(t) for t in qi_texts]])

    open_survey(page, base, sid)
    assert page.find_element(By.ID, "invitation").is_displayed()
    assert not page.find_element(By.ID, "survey-form").is_displayed()  # no question before the code
    assert page.find_element(By.ID, "status").text == "Verified. Please enter the invitation code printed in your invitation."
    wrong = "wrong-" + secrets.token_urlsafe(16)
    message = use_code(page, wrong)
    assert message.startswith("This invitation code is unknown or has already been used")
    assert not page.find_element(By.ID, "survey-form").is_displayed()
    [refused] = [json.loads(b) for b in posted(page)]
    assert set(refused) == {"code", "blinded_msg"} and refused["code"] == wrong

    assert use_code(page, code) == ("Your invitation code was exchanged on this device for an anonymous token. "
                                  "The collector cannot tell which invitation your answers come from.")
    assert page.find_element(By.ID, "survey-form").is_displayed()
    assert not page.find_element(By.ID, "invitation-form").is_displayed()
    [request] = [json.loads(b) for b in posted(page)]
    assert set(request) == {"code", "blinded_msg"} and request["code"] == code
    assert len(unb64url(request["blinded_msg"])) == 256 and request["blinded_msg"] != refused["blinded_msg"]
    fill(page, qi_texts, answers)
    shown, result = review_and_send(page)
    assert result == "Thank you: your answers were stored."
    [raw] = posted(page)
    assert raw == shown
    sent = json.loads(raw)
    assert set(sent) == KEYS | {"token"} and set(sent["token"]) == {"nonce", "signature"}
    assert sent["cell"] == int(cell) and sent["answers"] == answers
    nonce = verify_token(description, sent["token"])  # an ordinary RSA-PSS signature over the token input
    assert code not in raw and request["blinded_msg"] not in raw  # nothing the collector saw at issuance
    rows = stored(database_url, sid)
    assert rows == {hashlib.sha256(sent["idempotency_key"].encode()).hexdigest(): (int(cell), answers)}
    everything = stored_with_submissions(database_url)
    assert hashlib.sha256(nonce).hexdigest() in everything  # the spent nonce, hashed
    for secret in (code, hashlib.sha256(code.encode()).hexdigest(), request["blinded_msg"], sent["token"]["signature"],
                   sent["token"]["nonce"]):
        assert secret not in everything
    assert page.execute_script("return sessionStorage.length") == 0  # the spent token is forgotten

    # the code is redeemed: the same blinded message gets the same blind signature again (a lost
    # answer is retried), another one is refused, in the page as through the API
    status, first = issuance(base, sid, code, request["blinded_msg"])
    assert status == 200 and set(first) == {"blind_sig"}
    assert issuance(base, sid, code, request["blinded_msg"]) == (200, first)
    status, body = issuance(base, sid, code, refused["blinded_msg"])
    assert status == 403
    open_survey(page, base, sid)
    message = use_code(page, code)
    assert message == ("This invitation code is unknown or has already been used: check the code printed in your "
                       f"invitation (the collector said: {body['detail']}).")
    assert not page.find_element(By.ID, "survey-form").is_displayed()
    assert stored(database_url, sid) == rows

    # the other respondent's token works once: a second submission with the same token is refused
    assert use_code(page, other_code).startswith("Your invitation code was exchanged")
    fill(page, *respondents(frame, spec)[2])
    assert review_and_send(page)[1] == "Thank you: your answers were stored."
    second = json.loads(posted(page)[-1])
    again = dict(second, idempotency_key=secrets.token_urlsafe(24))
    status, body = call(base, "POST", f"/api/surveys/{sid}/submissions", again)
    assert status == 403
    assert len(stored(database_url, sid)) == 2


def test_blind_token_survives_a_lost_answer_and_a_reload(collector, page, published):
    """The collector cannot be reached: the request is kept, and after a reload the same blinded
    message is sent again for the same code; the collector redeems it but its answer is lost: the
    same message again gets the same blind signature; once the token is finalized a reload reuses it
    (no new issuance), and the submission carries it."""
    base, admin, database_url = collector
    frame, text, spec = published
    survey = publish(collector, text, requires_token=True)
    sid = survey["id"]
    status, description = call(base, "GET", f"/api/surveys/{sid}")
    status, body = call(base, "POST", f"/api/admin/surveys/{sid}/tokens", {"count": 1}, token=admin)
    [code] = body["tokens"]
    open_survey(page, base, sid)
    page.execute_cdp_cmd("Network.enable", {})
    page.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": True, "latency": 0,
                                                               "downloadThroughput": -1, "uploadThroughput": -1})
    try:
        message = use_code(page, code)
    finally:
        page.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": False, "latency": 0,
                                                                   "downloadThroughput": -1, "uploadThroughput": -1})
    assert message.startswith("The collector could not be reached. Your code is kept on this device")
    kept = json.loads(page.execute_script(f"return sessionStorage.getItem('probanon/token/{sid}')"))
    assert kept["code"] == code
    network(page)

    open_survey(page, base, sid)  # a reload: the code is filled in, the same request is sent again
    assert labelled(page, TOKEN_LABEL).get_attribute("value") == code
    # ... and this time the collector redeems the code but its answer is lost on the way back
    page.execute_script("""
        const real = window.fetch;
        window.fetch = async (url, init) => {
          const response = await real(url, init);
          if (String(url).endsWith("/issuance") && !window.dropped) { window.dropped = true; throw new TypeError("lost"); }
          return response;
        };""")
    page.find_element(By.ID, "redeem").send_keys(Keys.ENTER)
    result = page.find_element(By.ID, "invitation-result")
    WebDriverWait(page, TIMEOUT).until(lambda d: result.text.startswith("The collector could not be reached"))
    assert page.execute_script("return window.dropped") is True
    assert not page.find_element(By.ID, "survey-form").is_displayed()
    page.find_element(By.ID, "redeem").send_keys(Keys.ENTER)  # the same blinded message: the same blind signature
    WebDriverWait(page, TIMEOUT).until(lambda d: d.find_element(By.ID, "survey-form").is_displayed())
    requests = [json.loads(b) for b in posted(page)]
    assert requests == [{"code": code, "blinded_msg": kept["blinded_msg"]}] * 2
    saved = json.loads(page.execute_script(f"return sessionStorage.getItem('probanon/token/{sid}')"))
    assert set(saved) == {"digest", "key_id", "nonce", "signature", "idempotency_key"}  # the code is forgotten
    assert saved["nonce"] == kept["nonce"]

    open_survey(page, base, sid)  # another reload: the token is reused, no issuance
    assert page.find_element(By.ID, "invitation-result").text.startswith(
        "Your invitation code was already exchanged on this device for an anonymous token.")
    qi_texts, answers = respondents(frame, spec)[1]
    fill(page, qi_texts, answers)
    assert review_and_send(page)[1] == "Thank you: your answers were stored."
    [raw] = posted(page)
    sent = json.loads(raw)
    assert sent["token"] == {"nonce": saved["nonce"], "signature": saved["signature"]}
    assert sent["idempotency_key"] == saved["idempotency_key"]
    verify_token(description, sent["token"])
    assert len(stored(database_url, sid)) == 1


def test_digest_in_the_link_must_match(collector, page, published):
    base, _, database_url = collector
    _, text, spec = published
    survey = publish(collector, text)
    status, document = call(base, "GET", f"/api/surveys/{survey['id']}/document")
    assert document["specification"]["digest"] == digest(spec)  # computed here from the specification
    other = survey["digest"][:-1] + ("0" if survey["digest"][-1] != "0" else "1")
    open_survey(page, base, survey["id"], f"?digest={other}")
    error = page.find_element(By.ID, "error")
    assert error.is_displayed() and not page.find_element(By.ID, "survey-form").is_displayed()
    assert not page.find_elements(By.CSS_SELECTOR, "#survey-form input, #survey-form select")  # no form was built
    assert f"the digest in your invitation link, {other}, differs from this survey's {survey['digest']}" in error.text
    assert page.find_element(By.ID, "digest").text == survey["digest"]
    assert page.find_element(By.ID, "status").text == "Do not answer this survey."
    assert posted(page) == [] and stored(database_url, survey["id"]) == {}

    open_survey(page, base, survey["id"], "?digest=" + survey["digest"][7:].upper())  # the hex alone
    assert page.find_element(By.ID, "survey-form").is_displayed()
    assert "Checked against your letter" in page.find_element(By.ID, "letter-status").text
    assert not page.find_element(By.ID, "letter").is_displayed() and page.find_element(By.ID, "review").is_enabled()


def test_no_external_resource_and_no_console_error(collector, page, published):
    base, _, _ = collector
    frame, text, spec = published
    survey = publish(collector, text)
    qi_texts, answers = respondents(frame, spec)[2]
    open_survey(page, base, survey["id"])
    fill(page, qi_texts, answers)
    assert review_and_send(page)[1] == "Thank you: your answers were stored."
    requests, responses = network(page)
    requested = [e["request"]["url"] for e in requests]
    assert all(url.startswith(base + "/") for url in requested), requested
    sid = survey["id"]
    assert {url[len(base):].split("?")[0] for url in requested} >= {
        f"/respond/{sid}", "/static/respond.css", "/static/survey.js", "/static/respond.js",
        f"/api/surveys/{sid}", f"/api/surveys/{sid}/document", f"/api/surveys/{sid}/spec/canonical",
        f"/api/surveys/{sid}/submissions"}
    [document] = [r for r in responses if r["url"].split("?")[0] == f"{base}/respond/{sid}"]
    assert {k.lower(): v for k, v in document["headers"].items()}["content-security-policy"] == CSP
    log = page.get_log("browser")
    assert [e for e in log if e["level"] in ("SEVERE", "WARNING") or "Content Security Policy" in e["message"]] == []
    # the log does report a violation: an inline script, which the policy forbids
    page.execute_script("const s = document.createElement('script'); s.textContent = 'window.x = 1';"
                        " document.body.append(s);")
    assert page.execute_script("return window.x") is None
    assert any("Content Security Policy" in e["message"] for e in page.get_log("browser"))


# ---------------------------------------------------------------- the letter's digest (issues 40.4, 40.5)

def check_letter(driver, text):
    type_in(driver, "Digest printed in your letter", text, replace=True)
    driver.find_element(By.ID, "letter-check").click()


def test_without_the_digest_in_the_address_the_page_asks_for_the_letters(collector, page, published):
    """Issue 40.5: an address without ?digest= is not checked against the letter, and the page says
    so; nothing can be reviewed or sent until the letter's digest is typed and matches (a wrong one
    is refused), or the respondent says she has no letter (then the page keeps saying it is not
    checked). The form is built from the survey document, and the page shows what it says."""
    base, _, database_url = collector
    frame, text, spec = published
    survey = publish(collector, text, release={"small_cells": "suppress", "interim": ["2090-01-01T00:00:00Z"]})
    sid, letter = survey["id"], survey["digest"]
    qi_texts, answers = respondents(frame, spec)[2]

    open_survey(page, base, sid, "")
    assert page.find_element(By.ID, "survey-form").is_displayed()
    assert page.find_element(By.ID, "letter").is_displayed()
    status = page.find_element(By.ID, "letter-status").text
    assert status.startswith("Not checked against your letter") and "type the digest printed in your letter" in status
    assert page.find_element(By.ID, "status").text.startswith("Not checked against your letter")
    assert not page.find_element(By.ID, "review").is_enabled()
    assert "letter" not in page.find_element(By.ID, "verified").text  # it claims nothing about the letter
    summary = page.find_element(By.ID, "document-summary").text
    for said in ("Household survey", "2020-01-01T00:00:00Z to 2099-01-01T00:00:00Z", "1 interim release(s) before the "
                 "close (2090-01-01T00:00:00Z)", "How happy are you (0-10)? (integer from 0 to 10)",
                 "Your age (years)", "Monthly income (EUR)", digest(spec)):
        assert said in summary, said
    fill(page, qi_texts, answers)
    labelled(page, QI_LABELS[0]).send_keys(Keys.ENTER)  # the form's Enter: nothing happens (Review is disabled)
    assert not page.find_element(By.ID, "review-section").is_displayed()

    check_letter(page, "sha256:12")  # not a digest: said, nothing else changes
    assert page.find_element(By.ID, "letter-status").text.startswith("Not a digest")
    assert page.find_element(By.ID, "survey-form").is_displayed()
    other = letter[:-1] + ("0" if letter[-1] != "0" else "1")
    check_letter(page, other)  # another survey's digest: refused
    error = page.find_element(By.ID, "error")
    assert error.is_displayed() and "This is not the survey of your letter." in error.text
    assert f"the digest in your letter, {other}, differs from this survey's {letter}" in error.text
    assert not page.find_element(By.ID, "survey-form").is_displayed()
    assert page.find_element(By.ID, "status").text == "Do not answer this survey."
    assert posted(page) == [] and stored(database_url, sid) == {}

    open_survey(page, base, sid, "")  # the right digest typed in (the hex alone, upper case)
    check_letter(page, letter[7:].upper())
    assert page.find_element(By.ID, "letter-status").text == "Checked against your letter: its digest is this survey's."
    assert not page.find_element(By.ID, "letter").is_displayed()
    assert page.find_element(By.ID, "status").text.startswith("Verified.")
    fill(page, qi_texts, answers)
    assert review_and_send(page)[1] == "Thank you: your answers were stored."
    [body] = [json.loads(b) for b in posted(page)]
    assert body["digest"] == letter and len(stored(database_url, sid)) == 1

    open_survey(page, base, sid, "")  # no letter: the respondent may go on, and the page says it is not checked
    page.find_element(By.ID, "letter-skip").click()
    assert page.find_element(By.ID, "letter-status").text == ("Not checked against your letter: you chose to answer "
                                                              "without it.")
    assert page.find_element(By.ID, "status").text.startswith("Not checked against your letter")
    fill(page, qi_texts, answers)
    assert review_and_send(page)[1] == "Thank you: your answers were stored."
    assert len(stored(database_url, sid)) == 2


def test_the_page_refuses_a_document_or_description_the_letter_does_not_cover(collector, page, published):
    """Issue 40.4: the page recomputes the document's digest and compares the description with the
    document. A collector that relabels an answer in the description (the form would ask "your
    income, exactly") or gives another token or receipt key, or serves an altered document, is refused before any form is built, with or
    without the letter's digest in the address."""
    base, _, database_url = collector
    _, text, _ = published
    survey = publish(collector, text)
    sid, letter = survey["id"], survey["digest"]

    def relabel(info):
        info["answers"][1]["label"] = "Your monthly income, exactly"
        return info

    edits = {f"/api/surveys/{sid}": [relabel, lambda d: dict(d, title="Another survey"),
                                     lambda d: dict(d, frame=d["frame"] + 1),
                                     lambda d: dict(d, closes="2199-01-01T00:00:00Z"),
                                     # another token or receipt key (one per respondent would tag her)
                                     lambda d: dict(d, issuer=dict(d["issuer"] or {}, key_id="0" * 64)),
                                     lambda d: dict(d, receipt_key="A" * 43)],
             f"/api/surveys/{sid}/document": [relabel, lambda d: dict(d, frame=d["frame"] + 1)]}
    for path, changes in edits.items():
        for change in changes:
            def edit(p, data, path=path, change=change):
                if p != path:
                    return data
                changed = change(json.loads(data))
                return json.dumps(changed, sort_keys=True, separators=(",", ":")).encode()

            proxy = RewritingProxy(base, edit)
            try:
                for query in (f"?digest={letter}", ""):
                    open_survey(page, proxy.url, sid, query)
                    error = page.find_element(By.ID, "error")
                    assert error.is_displayed() and not page.find_elements(By.CSS_SELECTOR, "#survey-form input"), path
                    assert ("differs from this survey's" in error.text if path.endswith("document") and query else
                            "its document" in error.text), error.text
                    assert page.find_element(By.ID, "status").text == "Do not answer this survey."
            finally:
                proxy.close()
    assert posted(page) == [] and stored(database_url, sid) == {}


def test_a_survey_with_invitations_offers_no_answer_without_the_letter(collector, page, published):
    """Audit of issue 40, finding 5: on a survey with invitations (its document: "open": false) the
    page does not offer "I have no letter" (the letter that carries the code carries the digest;
    without it the listed digest proves nothing): no code is redeemed and nothing is sent until the
    letter's digest is given, even if the hidden box is ticked by a script."""
    base, admin, database_url = collector
    frame, text, spec = published
    survey = publish(collector, text, requires_token=True)
    sid, letter = survey["id"], survey["digest"]
    status, body = call(base, "POST", f"/api/admin/surveys/{sid}/tokens", {"count": 1}, token=admin)
    [code] = body["tokens"]

    open_survey(page, base, sid, "")
    assert page.find_element(By.ID, "letter").is_displayed()
    assert not page.find_element(By.ID, "letter-skip").is_displayed()
    assert "takes invitations" in page.find_element(By.ID, "letter-status").text
    assert page.find_element(By.ID, "status").text.startswith("Not checked against your letter")
    page.execute_script("document.getElementById('letter-skip').click()")  # ignored
    assert use_code(page, code) == "Give your letter's digest above before you use your code."
    assert posted(page) == [] and not page.find_element(By.ID, "survey-form").is_displayed()

    check_letter(page, letter)
    assert page.find_element(By.ID, "letter-status").text == "Checked against your letter: its digest is this survey's."
    assert use_code(page, code).startswith("Your invitation code was exchanged")
    qi_texts, answers = respondents(frame, spec)[1]
    fill(page, qi_texts, answers)
    assert review_and_send(page)[1].startswith("Thank you: your answers were stored.")
    assert len(stored(database_url, sid)) == 1

    other_text = design_spec(population(300, seed=41))[1]
    open_survey(page, base, publish(collector, other_text)["id"], "")  # an open survey still offers it
    assert page.find_element(By.ID, "letter-skip").is_displayed()


# ---------------------------------------------------------------- the receipt (audit of issue 40, finding 8)

RECEIPT_COMMAND = "probanon survey receipt --report release_report.json --receipt receipt.json --key={}"


def shown_receipt(driver) -> tuple[str, str]:
    """(the receipt's status line, the receipt box's text) once the page has shown the receipt."""
    WebDriverWait(driver, TIMEOUT).until(lambda d: d.find_element(By.ID, "receipt-section").is_displayed())
    return driver.find_element(By.ID, "receipt-status").text, driver.find_element(By.ID, "receipt").get_attribute("value")


def test_the_page_verifies_and_shows_the_receipt(collector, page, published):
    """The page verifies the receipt of the stored answers on the device (Ed25519 with the survey
    document's receipt_key, over receipts.py's canonical row, the canonical answers as Python's
    json.dumps writes them: here 1e-05) and shows it in a box with the command that checks it
    against the release report; Python's receipts.verify accepts what it shows. A collector that
    answers with a forged receipt (another key's signature, another cell, none) makes the page say
    the receipt does not verify; a browser without Ed25519 shows it unverified and says so."""
    from probanon.service import receipts
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    base, _, database_url = collector
    frame, text, spec = published
    survey = publish(collector, text)
    sid = survey["id"]
    key = call(base, "GET", f"/api/surveys/{sid}")[1]["receipt_key"]
    people = respondents(frame, spec)
    qi_texts, answers = people[2]
    answers = dict(answers, spending="0.00001")  # Python stores it as 1e-05
    open_survey(page, base, sid)
    fill(page, qi_texts, answers)
    assert review_and_send(page)[1] == "Thank you: your answers were stored."
    [raw] = posted(page)
    body = json.loads(raw)
    status, box = shown_receipt(page)
    assert status.startswith("Receipt verified on this device"), status
    receipt = json.loads(box)
    canonical = json.dumps(body["answers"], sort_keys=True)
    assert "1e-05" in canonical
    assert receipts.verify(key, sid, body["idempotency_key"], body["cell"], canonical, receipt) == receipt
    assert page.find_element(By.ID, "receipt-command").text == RECEIPT_COMMAND.format(key)
    assert page.find_element(By.ID, "receipt-copy").is_displayed()

    other = Ed25519PrivateKey.generate()

    def another_key(r):
        message = receipts.canonical_row(sid, r["key_sha256"], r["cell"], r["answers_sha256"])
        return dict(r, signature=receipts.b64url(other.sign(message)))

    forgeries = [(another_key, "the receipt's signature does not verify with the survey's receipt key"),
                 (lambda r: dict(r, cell=r["cell"] + 1), "the receipt's cell is not that of the answers sent"),
                 (lambda r: None, "the collector sent no receipt")]
    for (qi_texts, answers), (forge, says) in zip(people[3:] + people[:1], forgeries):
        def edit(path, data, forge=forge):
            if path != f"/api/surveys/{sid}/submissions":
                return data
            reply = json.loads(data)
            return json.dumps(dict(reply, receipt=forge(reply["receipt"]))).encode()

        proxy = RewritingProxy(base, edit)
        try:
            open_survey(page, proxy.url, sid)
            fill(page, qi_texts, answers)
            assert review_and_send(page)[1] == "Thank you: your answers were stored."
            status, _ = shown_receipt(page)
            assert status.startswith(f"The collector's receipt does not verify: {says}."), status
            assert page.find_element(By.ID, "receipt-status").get_attribute("class") == "error"
        finally:
            proxy.close()

    # a browser without Ed25519 in WebCrypto: the receipt is shown unverified, and the page says so
    qi_texts, answers = people[1]
    open_survey(page, base, sid)
    page.execute_script("""
        const subtle = crypto.subtle, real = subtle.importKey.bind(subtle);
        subtle.importKey = (format, key, algorithm, ...rest) => algorithm && algorithm.name === "Ed25519" ?
          Promise.reject(new DOMException("Ed25519 is not supported", "NotSupportedError")) :
          real(format, key, algorithm, ...rest);""")
    fill(page, qi_texts, answers)
    assert review_and_send(page)[1] == "Thank you: your answers were stored."
    status, box = shown_receipt(page)
    assert status == ("Receipt not verified: this browser cannot check Ed25519 signatures. Keep it and check it with "
                      "the command below."), status
    body = json.loads(posted(page)[-1])
    receipts.verify(key, sid, body["idempotency_key"], body["cell"], json.dumps(body["answers"], sort_keys=True),
                    json.loads(box))
    assert len(stored(database_url, sid)) == 5
