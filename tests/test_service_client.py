"""The respondent client (probanon.service.client) and ``probanon survey respond`` against a running
collector: the cell is computed locally (equal to the published function's assignment), only the
cell and the answers travel, a wrong digest stops everything before a request is posted, invitation
codes redeemed for blind tokens, and retries that keep the idempotency key and the token."""

import csv
import hashlib
import http.server
import io
import json
import re
import threading
import warnings

import pytest
import sqlalchemy as sa

from probanon.cli import main
from probanon.errors import InputError, ParameterError, ProbanonNote, SpecificationError
from probanon.service import client, db
from probanon.service import http as service_http
from probanon.survey.spec import assign, digest, verify
from service_support import RewritingProxy, call, design_spec, population, survey_body

ANSWERS = {"happy": 7, "spending": 12.5, "region": "north"}


def _publish(base, admin, frame, **changes):
    d, text = design_spec(frame)
    status, created = call(base, "POST", "/api/admin/surveys", survey_body(text, **changes), token=admin)
    assert status == 201, created
    return d, json.loads(text), created["id"]


def _letter(base, sid) -> str:
    """The digest printed in the survey's letters (the survey document's, as listed)."""
    return call(base, "GET", f"/api/surveys/{sid}")[1]["digest"]


def _rows(database, survey_id):
    engine = db.connect(database)
    try:
        with engine.connect() as conn:
            t = db.submissions
            return [r._asdict() for r in conn.execute(sa.select(t).where(t.c.survey_id == survey_id))]
    finally:
        engine.dispose()


@pytest.fixture
def posts(monkeypatch):
    """Every request the client makes, as (method, path, body)."""
    seen, real = [], client.call

    def recording(url, method, path, body=None, **kw):
        seen.append((method, path, body))
        return real(url, method, path, body, **kw)

    monkeypatch.setattr(client, "call", recording)
    return seen


def test_respond_stores_the_locally_computed_cell_and_no_quasi_identifier(collector, posts):
    base, admin, database = collector
    frame = population(300, seed=1)
    d, spec, sid = _publish(base, admin, frame)
    picked = [3, 77, 150, 299]
    responses = []
    for i in picked:
        values = {"age": float(frame.age[i]), "income": float(frame.income[i])}
        r = client.respond(base, sid, values, ANSWERS)
        # the cell: the published function applied to the values, and the design's own label of the record
        assert r.cell == int(assign(spec, [[values["age"], values["income"]]])[0][0]) == d.labels[i]
        assert (r.status, r.reply["status"], r.digest) == (201, "stored", _letter(base, sid))
        assert r.receipt == r.reply["receipt"]  # verified by respond (issue 40.10)
        assert set(r.sent) == {"digest", "cell", "answers", "idempotency_key"}
        assert r.sent["answers"] == ANSWERS
        assert set(r.sent["answers"]) == set(ANSWERS)  # no quasi-identifier name, and no value either:
        text = json.dumps(r.sent)  # (the key is base64url and the digest hex: neither holds a '.')
        assert repr(values["age"]) not in text and repr(values["income"]) not in text
        responses.append(r)
    # the only POSTs are the four submissions, and they carry nothing but the sent bodies
    assert [b for m, _, b in posts if m == "POST"] == [r.sent for r in responses]
    rows = _rows(database, sid)
    assert sorted(r["cell"] for r in rows) == sorted(int(d.labels[i]) for i in picked)
    assert set(rows[0]) == {"survey_id", "key_hash", "cell", "answers", "day"}
    for row in rows:
        assert json.loads(row["answers"]) == ANSWERS
    keys = {r.sent["idempotency_key"] for r in responses}
    assert len(keys) == 4 and all(len(k) >= 22 for k in keys)


def test_answers_are_typed_by_the_schema_and_checked_before_sending(collector, posts):
    base, admin, database = collector
    frame = population(200, seed=2)
    _, _, sid = _publish(base, admin, frame)
    values = {"age": "41", "income": "2999.5"}
    r = client.respond(base, sid, values, {"happy": "7", "spending": "12.5", "region": "south"})
    assert r.sent["answers"] == {"happy": 7, "spending": 12.5, "region": "south"}
    assert type(r.sent["answers"]["happy"]) is int and type(r.sent["answers"]["spending"]) is float
    bad = [({"happy": "7.5", "region": "south"}, InputError, "integer"),
           ({"happy": "7", "region": "east"}, InputError, "categories"),
           ({"happy": "11", "region": "south"}, InputError, "must lie in"),
           ({"region": "south"}, InputError, "required"),
           ({"happy": "7", "region": "south", "age": "41"}, InputError, "quasi-identifier"),
           ({"happy": "7", "region": "south", "mood": "1"}, InputError, "undeclared")]
    for answers, error, words in bad:
        with pytest.raises(error, match=words):
            client.respond(base, sid, values, answers)
    for v, words in [({"age": "41"}, "no value for 'income'"),
                     ({"age": "41", "income": "1", "zip": "3"}, "'zip' is not a quasi-identifier"),
                     ({"age": "old", "income": "1"}, "'age' must be a finite number")]:
        with pytest.raises(InputError, match=words):
            client.respond(base, sid, v, {"happy": 1, "region": "south"})
    assert [m for m, _, _ in posts].count("POST") == 1
    assert len(_rows(database, sid)) == 1


def test_a_wrong_digest_is_refused_before_anything_is_sent(collector, posts, monkeypatch):
    base, admin, database = collector
    frame = population(200, seed=3)
    _, spec, sid = _publish(base, admin, frame)
    values = {"age": 50.0, "income": 3000.0}
    other = "sha256:" + "0" * 64
    with pytest.raises(SpecificationError, match="not the survey of your letter"):
        client.respond(base, sid, values, ANSWERS, expected_digest=other)
    with pytest.raises(ParameterError, match="64 hexadecimal"):
        client.respond(base, sid, values, ANSWERS, expected_digest="sha256:abc")
    assert "POST" not in [m for m, _, _ in posts] and _rows(database, sid) == []
    # the invitation's digest in another case is the same digest
    letter = _letter(base, sid)
    r = client.respond(base, sid, values, ANSWERS, expected_digest=letter.upper().replace("SHA256:", ""))
    assert r.status == 201 and len(_rows(database, sid)) == 1

    # a collector that lists another digest than its document's (here: the real one is the
    # respondent's, the listed one another survey's) is refused too
    real = client.call

    def lying(url, method, path, body=None, **kw):
        status, payload = real(url, method, path, body, **kw)
        if method == "GET" and path == f"/api/surveys/{sid}":
            payload = dict(payload, digest=digest({"another": "spec"}))
        return status, payload

    monkeypatch.setattr(client, "call", lying)
    with pytest.raises(SpecificationError, match="is listed with digest"):
        client.respond(base, sid, values, ANSWERS, expected_digest=letter)
    with pytest.raises(SpecificationError, match="not the survey of your letter"):  # without the letter's digest
        client.respond(base, sid, values, ANSWERS)
    assert len(_rows(database, sid)) == 1


def test_invitation_tokens(collector, posts):
    base, admin, database = collector
    frame = population(200, seed=4)
    _, spec, sid = _publish(base, admin, frame, requires_token=True)
    status, issued = call(base, "POST", f"/api/admin/surveys/{sid}/tokens", {"count": 2}, token=admin)
    assert status == 200
    first, second = issued["tokens"]
    values = {"age": 33.0, "income": 2500.0}
    letter = _letter(base, sid)
    with pytest.raises(ParameterError, match="invitation code"):
        client.respond(base, sid, values, ANSWERS, expected_digest=letter)
    assert "POST" not in [m for m, _, _ in posts]
    r = client.respond(base, sid, values, ANSWERS, token=first, expected_digest=letter)
    # the code went to the issuance only, blinded message beside it; the submission carries the
    # unblinded token, which the collector never saw and which holds nothing of the code
    (issuance, submission) = [(p, b) for m, p, b in posts if m == "POST"]
    assert issuance[0] == f"/api/surveys/{sid}/issuance" and issuance[1]["code"] == first
    assert submission == (f"/api/surveys/{sid}/submissions", r.sent)
    assert r.status == 201 and set(r.sent["token"]) == {"nonce", "signature"}
    assert first not in json.dumps(r.sent) and issuance[1]["blinded_msg"] not in json.dumps(r.sent)
    with pytest.raises(client.ServiceError, match=r"HTTP 403") as used:  # a redeemed code
        client.respond(base, sid, values, ANSWERS, token=first, expected_digest=letter)
    assert used.value.status == 403 and "\n" not in str(used.value)
    rows = _rows(database, sid)
    assert len(rows) == 1 and first not in json.dumps(rows, default=str)
    assert client.respond(base, sid, values, ANSWERS, token=second, expected_digest=letter).status == 201
    # a survey without invitations refuses a code before anything is sent
    _, _, open_id = _publish(base, admin, population(200, seed=5))
    n_posts = [m for m, _, _ in posts].count("POST")
    with pytest.raises(ParameterError, match="takes no invitation code"):
        client.respond(base, open_id, values, ANSWERS, token=second)
    assert [m for m, _, _ in posts].count("POST") == n_posts


def test_lost_answers_are_asked_again_with_the_same_blinded_message_and_token(collector, monkeypatch):
    """The collector handles the issuance and the submission but their answers are lost: the client
    asks again with the same blinded message (the same blind signature comes back: the code is not
    spent twice) and submits again with the same idempotency key and token ("already stored")."""
    import urllib.parse
    import urllib.request

    monkeypatch.setattr(service_http, "BACKOFF", 0.01)
    base, admin, database = collector
    _, _, sid = _publish(base, admin, population(200, seed=6), requires_token=True)
    _, issued = call(base, "POST", f"/api/admin/surveys/{sid}/tokens", {"count": 1}, token=admin)
    real, seen, lost = urllib.request.urlopen, [], set()

    def losing(req, timeout=None):
        path = urllib.parse.urlsplit(req.full_url).path
        answer = real(req, timeout=timeout)
        if req.get_method() == "POST":
            body = answer.read()
            seen.append((path, json.loads(req.data), answer.status, json.loads(body)))
            if path not in lost:  # handled, then the connection drops before the answer arrives
                lost.add(path)
                answer.close()
                raise ConnectionResetError("connection reset by peer")
            answer.read = lambda *a: body
        return answer

    monkeypatch.setattr(urllib.request, "urlopen", losing)
    r = client.respond(base, sid, {"age": 40.0, "income": 2000.0}, ANSWERS, token=issued["tokens"][0],
                       expected_digest=_letter(base, sid))
    assert (r.status, r.reply["status"]) == (200, "already stored") and r.receipt == r.reply["receipt"]
    assert [(p.rsplit("/", 1)[1], status) for p, _, status, _ in seen] == \
        [("issuance", 200), ("issuance", 200), ("submissions", 201), ("submissions", 200)]
    assert seen[0][1] == seen[1][1] and seen[0][3] == seen[1][3]  # same blinded message, same blind signature
    assert seen[2][1] == seen[3][1] == r.sent  # same key, same token
    assert len(_rows(database, sid)) == 1


def test_the_same_body_twice_is_stored_once(collector):
    base, admin, database = collector
    _, spec, sid = _publish(base, admin, population(200, seed=6))
    r = client.respond(base, sid, {"age": 70.0, "income": 4000.0}, ANSWERS)
    assert client.submit(base, sid, r.sent) == (200, {"status": "already stored", "receipt": r.receipt})
    assert len(_rows(database, sid)) == 1
    changed = dict(r.sent, cell=(r.cell + 1) % len(spec["cells"]))
    with pytest.raises(client.ServiceError, match="HTTP 409") as err:
        client.submit(base, sid, changed)
    assert err.value.status == 409 and len(_rows(database, sid)) == 1


class _Flaky(http.server.BaseHTTPRequestHandler):
    """Answers 503 to the first POST, 201 to the next; records every body."""

    bodies: list

    def do_POST(self):  # noqa: N802 - the http.server interface
        self.bodies.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
        ok = len(self.bodies) > 1
        payload = json.dumps({"status": "stored"} if ok else {"detail": "the database is unavailable; try again"})
        self.send_response(201 if ok else 503)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload.encode())

    def log_message(self, *args):
        pass


def test_a_failed_post_is_retried_with_the_same_key(monkeypatch):
    monkeypatch.setattr(service_http, "BACKOFF", 0.01)
    bodies = []
    handler = type("Flaky", (_Flaky,), {"bodies": bodies})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        body = {"digest": "sha256:" + "a" * 64, "cell": 0, "answers": {}, "idempotency_key": "k" * 43}
        assert client.submit(base, 1, body) == (201, {"status": "stored"})
        assert bodies == [body, body]
        bodies.clear()
        with pytest.raises(client.ServiceError, match=r"HTTP 503, 1 tries\): the database is unavailable") as err:
            client.submit(base, 1, body, attempts=1)
        assert err.value.status == 503 and bodies == [body]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    # nobody listens any more: three tries, then one line
    with pytest.raises(client.ServiceError, match=r"cannot reach the collector at .*3 tries\)") as err:
        client.submit(base, 1, body)
    assert err.value.status is None and "\n" not in str(err.value)
    with pytest.raises(ParameterError, match="http:// or https://"):
        client.submit("file:///etc/passwd", 1, body)


def test_cli_respond_end_to_end(collector, capsys, tmp_path):
    base, admin, database = collector
    frame = population(200, seed=7)
    _, spec, sid = _publish(base, admin, frame, requires_token=True)
    _, issued = call(base, "POST", f"/api/admin/surveys/{sid}/tokens", {"count": 1}, token=admin)
    token = issued["tokens"][0]
    token_file = tmp_path / "invitation.txt"
    token_file.write_text(token + "\n")
    args = ["survey", "respond", base, "--survey", str(sid), "--values", "age=45, income=3100.25",
            "--answers", "happy=3,region=south,spending=0.5", "--digest", _letter(base, sid)]
    assert main(args + ["--token-file", str(token_file)]) == 0
    out = capsys.readouterr().out
    assert token not in out
    shown = [line for line in out.strip().splitlines() if line.startswith("document: ")]
    lines = out.strip().splitlines()[len(shown):]
    # what the letter's digest covers, shown before anything is sent (issue 40.4)
    assert shown[0] == f"document: digest: {_letter(base, sid)}"  # first, to compare with the letter's
    assert shown[1] == "document: survey: Household survey" and "document: window: 2020-01-01T00:00:00Z to " \
        "2099-01-01T00:00:00Z" in shown and any("How happy are you (0-10)? [happy: integer in [0, 10]]" in x
                                               for x in shown)
    assert any("one single-use invitation per respondent" in x for x in shown)
    assert lines[0].startswith("sent: ") and lines[1] == 'collector: HTTP 201 {"status": "stored"}'
    sent = json.loads(lines[0][len("sent: "):])
    assert sent["token"] == "(given)" and sent["digest"] == _letter(base, sid)
    assert sent["cell"] == int(assign(spec, [[45.0, 3100.25]])[0][0])
    assert sent["answers"] == {"happy": 3, "region": "south", "spending": 0.5}
    assert set(sent) == {"digest", "cell", "answers", "idempotency_key", "token"} and "3100.25" not in out
    rows = _rows(database, sid)
    assert [r["cell"] for r in rows] == [sent["cell"]]
    # errors: one line on stderr, exit 2, nothing stored
    given = ["--token-file", str(token_file)]
    for bad in (args[:-2] + ["--digest", "sha256:" + "1" * 64, *given],  # not the published spec
                args + given,  # the invitation was used
                args,  # no invitation (and no terminal to ask for it)
                [*args[:5], "--values", "age=45", *args[7:], *given],  # a missing value
                [*args[:7], "--answers", "happy=three,region=south", *args[9:], *given],
                [*args[:5], "--values", "age=45,,income=3", *args[7:], *given]):
        assert main(bad) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("probanon: error:") and len(err.splitlines()) == 1, err
    assert len(_rows(database, sid)) == 1


class Terminal:
    """Standard input that is a terminal (or a pipe, ``tty=False``) holding ``text``."""

    def __init__(self, text: str = "", tty: bool = True):
        import io

        self.stream, self.tty = io.StringIO(text), tty

    def isatty(self):
        return self.tty

    def read(self, *args):
        return self.stream.read(*args)

    def readline(self, *args):
        return self.stream.readline(*args)


def test_cli_respond_never_takes_the_token_on_the_command_line(collector, capsys, monkeypatch, tmp_path, posts):
    """--token is refused before anything is sent (and never echoed); the token comes from a file,
    standard input (--token-file -) or a hidden prompt (getpass); the quasi-identifiers from
    --values-file, standard input or prompts."""
    import getpass

    base, admin, database = collector
    _, spec, sid = _publish(base, admin, population(200, seed=8), requires_token=True)
    _, issued = call(base, "POST", f"/api/admin/surveys/{sid}/tokens", {"count": 4}, token=admin)
    tokens = issued["tokens"]
    head = ["survey", "respond", base, "--survey", str(sid), "--answers", "happy=3,region=south",
            "--digest", _letter(base, sid)]
    values = ["--values", "age=45,income=3100.25"]
    cell = int(assign(spec, [[45.0, 3100.25]])[0][0])
    for refused in (["--token", tokens[0]], [f"--token={tokens[0]}"], ["--token"]):
        assert main(head + values + refused) == 2
        err = capsys.readouterr().err
        assert "never given on the command line" in err and tokens[0] not in err and len(err.strip().splitlines()) == 1
    assert posts == [] and _rows(database, sid) == []

    def sent_cells():
        return [r["cell"] for r in _rows(database, sid)]

    # standard input
    monkeypatch.setattr("sys.stdin", Terminal(tokens[0] + "\n", tty=False))
    assert main(head + values + ["--token-file", "-"]) == 0
    assert tokens[0] not in capsys.readouterr().out and sent_cells() == [cell]
    # a hidden prompt, when standard input is a terminal
    asked = []
    monkeypatch.setattr(getpass, "getpass", lambda prompt="": asked.append(prompt) or tokens[1])
    monkeypatch.setattr("sys.stdin", Terminal())
    assert main(head + values) == 0
    assert len(asked) == 1 and "invitation code" in asked[0] and sent_cells() == [cell] * 2
    # no terminal and no --token-file: refused, nothing sent
    monkeypatch.setattr("sys.stdin", Terminal(tty=False))
    assert main(head + values) == 2
    assert "--token-file" in capsys.readouterr().err and len(sent_cells()) == 2
    # the quasi-identifiers from a file, from standard input, and from prompts
    values_file = tmp_path / "values.txt"
    values_file.write_text("# my answers\nage = 45\n\nincome=3100.25\n")
    monkeypatch.setattr("sys.stdin", Terminal(tokens[2] + "\n", tty=False))
    assert main(head + ["--values-file", str(values_file), "--token-file", "-"]) == 0
    token_file = tmp_path / "invitation.txt"
    token_file.write_text(tokens[3])
    monkeypatch.setattr("sys.stdin", Terminal("45\n3100.25\n"))
    assert main(head + ["--token-file", str(token_file)]) == 0
    captured = capsys.readouterr()
    assert "Your age (years): " in captured.err and "Monthly income (EUR): " in captured.err
    assert sent_cells() == [cell] * 4
    assert main(head + ["--values-file", "-", "--token-file", "-"]) == 2
    assert "standard input" in capsys.readouterr().err
    assert main(head + ["--values-file", str(values_file), "--token-file", str(token_file)]) == 2  # used by now
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", Terminal(tty=False))
    assert main(head + ["--token-file", str(token_file)]) == 2  # no values and no terminal to ask
    assert "--values-file" in capsys.readouterr().err
    assert sent_cells() == [cell] * 4


def test_the_client_needs_only_the_standard_library():
    import subprocess
    import sys

    code = ("import sys\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('fastapi', 'starlette', 'sqlalchemy', 'uvicorn', 'psycopg'):\n"
            "            raise ImportError(name)\n"
            "sys.meta_path.insert(0, Block())\n"
            "from probanon.service.client import respond, parse_pairs\n"
            "from probanon.cli import build_parser\n"
            "build_parser()\n"
            "print(parse_pairs('a=1, b=x'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "{'a': '1', 'b': 'x'}"


def test_demo_survey_part(tmp_path):
    """The demo's survey section against an independent recount: who responds (the demo's seeded
    draw), their cells (the published function on their values), the failing cells (0 < responses
    < k), the release (centroids of the cells kept, the respondents' answers)."""
    import numpy as np
    import pandas as pd

    from probanon.cli.demo import SURVEY_DEMO, demo_survey
    from probanon.data import synthetic_survey
    from probanon.report import Report

    seed, n = 11, 300
    rep = Report("t")
    report = demo_survey(tmp_path, rep, n, seed)
    spec = json.loads((tmp_path / "survey_spec.json").read_text())
    verify(spec)  # the report's digest is the survey document's, which names this specification's
    assert report["digest"].startswith("sha256:") and report["digest"] != spec["digest"]
    assert json.loads((tmp_path / "survey_release_report.json").read_text()) == report
    release = pd.read_csv(tmp_path / "survey_release.csv")
    k, pi, qi = SURVEY_DEMO["k"], SURVEY_DEMO["participation"], SURVEY_DEMO["columns"]
    people = synthetic_survey(n, random_state=seed)
    responds = np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[2]).random(n) < pi
    cells = assign(spec, people.loc[responds, qi].to_numpy(float))[0]
    counts = np.bincount(cells, minlength=len(spec["cells"]))
    failed = (counts > 0) & (counts < k)
    assert failed.any()  # this seed makes a cell fail: the suppression is exercised
    assert report["responses"] == responds.sum() and report["records"] == n
    assert report["failures"]["observed_failing_cells"] == failed.sum()
    assert report["suppressed_records"] == counts[failed].sum()
    assert report["failures"]["predicted_failing_cells"] == pytest.approx(sum(c["failure"] for c in spec["cells"]))
    kept = ~failed[cells]
    assert len(release) == kept.sum() == report["released_records"]
    assert np.array_equal(np.bincount(release["cell"], minlength=counts.size), np.where(failed, 0, counts))
    assert report["achieved_k"] == counts[(counts > 0) & ~failed].min() >= k
    centroids = np.asarray(spec["function"]["centroids"])[release["cell"]]
    assert np.allclose(release[qi].to_numpy(), centroids, rtol=1e-12)
    assert sorted(release["health_spending"]) == sorted(people.loc[responds, "health_spending"][kept])
    page = "".join(rep.parts)
    assert "Guarantee (survey)" in page and "achieved k of the release" in page


def test_a_quasi_identifier_asked_as_an_answer_is_never_sent():
    """A collector whose answer schema asks for a quasi-identifier (the page and this client read the
    schema from the collector, outside the digest) gets nothing: the client refuses before sending."""
    info = {"answers": [{"name": "age", "type": "number"}, {"name": "happy", "type": "integer"}]}
    with pytest.raises(client.ServiceError, match="quasi-identifier 'age'"):
        client.typed_answers(info, {"age": "41", "happy": "3"}, ["age", "income"])
    assert client.typed_answers(info, {"age": "41", "happy": "3"}, ["income"]) == {"age": 41.0, "happy": 3}


def test_office_cli_issues_and_revokes_an_analyst_token(collector, monkeypatch, capsys):
    base, admin, _ = collector
    monkeypatch.setenv("PROBANON_TOKEN", admin)
    assert main(["collector", "analyst", base, "--note", "team"]) == 0
    out, err = capsys.readouterr()
    token = out.strip()
    ident = err.split("analyst token ")[1].split()[0]
    assert ident == hashlib.sha256(token.encode()).hexdigest()[:12]
    assert main(["collector", "revoke", base, "--id", ident, "--note", "left the team"]) == 0
    assert main(["collector", "revoke", base, "--id", ident]) == 2  # no longer active
    assert "no active admin or analyst token" in capsys.readouterr().err
    assert main(["collector", "audit", base]) == 0
    assert f"admin {hashlib.sha256(admin.encode()).hexdigest()[:12]}: analyst token revoked" \
        in capsys.readouterr().out
    monkeypatch.setenv("PROBANON_TOKEN", token)
    assert main(["collector", "audit", base]) == 2  # the revoked token opens nothing


def test_a_document_or_description_the_letter_does_not_cover_is_refused_before_anything_is_sent(collector, posts,
                                                                                                   monkeypatch):
    """Issue 40.4: survey respond checks the survey document against the letter's digest and the
    description against the document. A collector that serves another document (a label turned into
    "your income, exactly", an answer renamed) or describes the survey otherwise than its document
    (title, answers, window, release rule, frame, open) gets nothing; the survey is answered as the
    document says."""
    base, admin, database = collector
    _, spec, sid = _publish(base, admin, population(200, seed=9))
    letter = _letter(base, sid)
    values = {"age": 50.0, "income": 3000.0}
    real = client.call

    def lying(path_suffix, change):
        def call(url, method, path, body=None, **kw):
            status, payload = real(url, method, path, body, **kw)
            if method == "GET" and path == f"/api/surveys/{sid}{path_suffix}":
                payload = change(payload)
            return status, payload
        return call

    def document_edit(edit):
        def change(raw):
            document = json.loads(raw)
            edit(document)
            return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
        return change

    def answers_relabelled(d):
        d["answers"] = [dict(a, label="Your monthly income, exactly") if a["name"] == "spending" else a
                        for a in d["answers"]]
        return d

    documents = [document_edit(answers_relabelled), document_edit(lambda d: d.update(frame=d["frame"] + 1)),
                 document_edit(lambda d: d["release"].update(interim=["2050-01-01T00:00:00Z"])),
                 lambda raw: raw + b" "]
    descriptions = [answers_relabelled, lambda d: dict(d, title="Another survey"),
                    lambda d: dict(d, answers=d["answers"] + [{"name": "salary", "type": "number"}]),
                    lambda d: dict(d, opens="2019-01-01T00:00:00Z"), lambda d: dict(d, closes="2199-01-01T00:00:00Z"),
                    lambda d: dict(d, frame=d["frame"] * 2), lambda d: dict(d, open=not d["open"]),
                    lambda d: dict(d, release={"small_cells": "flag", "interim": []}),
                    lambda d: dict(d, questions={**d["questions"], "age": {"label": "Age in days", "unit": None}}),
                    # a key of the collector's choosing (one per respondent would tag her): not the document's
                    lambda d: dict(d, receipt_key="A" * 43),
                    lambda d: dict(d, issuer={"algorithm": "RSABSSA-SHA384-PSS-Deterministic", "public_key": "AQAB",
                                              "key_id": hashlib.sha256(b"\x01\x00\x01").hexdigest()})]
    for suffix, changes, says in (("/document", documents, "not the survey of your letter"),
                                  ("", descriptions, "describes another survey")):
        for change in changes:
            monkeypatch.setattr(client, "call", lying(suffix, change))
            for expected in (letter, None):
                with pytest.raises(SpecificationError, match=says if expected else "letter|describes"):
                    client.respond(base, sid, values, ANSWERS, expected_digest=expected)
    monkeypatch.setattr(client, "call", real)
    assert "POST" not in [m for m, _, _ in posts] and _rows(database, sid) == []
    # the collector as it is: stored
    r = client.respond(base, sid, values, ANSWERS, expected_digest=letter)
    assert r.status == 201 and r.document["specification"]["digest"] == spec["digest"]


def test_a_survey_with_invitations_is_not_answered_without_the_letters_digest(collector, posts, capsys, tmp_path):
    """Audit of issue 40, finding 5: the listed digest proves nothing against a collector that serves
    one respondent a document of its own, e.g. with an issuer key of hers alone (its blind
    signatures then tag her submission), and lists its digest to her. A survey with invitations
    (its document says "open": false) is therefore refused without the letter's digest, in one
    line, before anything is sent; with it, the forged document is refused too. An open survey
    without --digest is answered, and survey respond says it is not checked against a letter; it
    prints the document's digest first."""
    from probanon.service import document as documents
    from probanon.service import tokens

    base, admin, database = collector
    _, _, sid = _publish(base, admin, population(200, seed=12), requires_token=True)
    letter = _letter(base, sid)
    _, issued = call(base, "POST", f"/api/admin/surveys/{sid}/tokens", {"count": 1}, token=admin)
    [code] = issued["tokens"]
    real_document = call(base, "GET", f"/api/surveys/{sid}/document")[1]
    tag = tokens.public_form(tokens.new_private_key())  # her own key: a tag
    forged = documents.canonical(dict(real_document, issuer=tag))
    forged_digest = documents.digest_of(forged)

    def edit(path, data):
        if path == f"/api/surveys/{sid}/document":
            return forged
        if path == f"/api/surveys/{sid}":
            return json.dumps(dict(json.loads(data), issuer=tag, digest=forged_digest)).encode()
        return data

    values = {"age": 33.0, "income": 2500.0}
    proxy = RewritingProxy(base, edit)
    try:
        with pytest.raises(ParameterError, match="takes invitations: give the digest printed in your letter"):
            client.respond(proxy.url, sid, values, ANSWERS, token=code)
        with pytest.raises(SpecificationError, match="not the survey of your letter"):
            client.respond(proxy.url, sid, values, ANSWERS, token=code, expected_digest=letter)
        args = ["survey", "respond", proxy.url, "--survey", str(sid), "--values", "age=33,income=2500",
                "--answers", "happy=3,region=south", "--token-file", str(tmp_path / "code.txt")]
        (tmp_path / "code.txt").write_text(code)
        assert main(args) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("probanon: error: survey") and "--digest" in err and len(err.splitlines()) == 1
    finally:
        proxy.close()
    # the honest collector, too, is not answered without the letter's digest
    with pytest.raises(ParameterError, match="give the digest printed in your letter"):
        client.respond(base, sid, values, ANSWERS, token=code)
    assert "POST" not in [m for m, _, _ in posts] and _rows(database, sid) == []
    assert client.respond(base, sid, values, ANSWERS, token=code, expected_digest=letter).status == 201

    # an open survey without --digest: answered, said not to be checked against a letter
    _, _, open_id = _publish(base, admin, population(200, seed=13))
    open_letter = _letter(base, open_id)
    assert main(["survey", "respond", base, "--survey", str(open_id), "--values", "age=33,income=2500",
                 "--answers", "happy=3,region=south"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == f"document: digest: {open_letter}"
    assert "not checked against a letter" in err and open_letter in err
    assert main(["survey", "respond", base, "--survey", str(open_id), "--values", "age=33,income=2500",
                 "--answers", "happy=3,region=south", "--digest", open_letter]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == f"document: digest: {open_letter}" and "not checked" not in err
    assert len(_rows(database, open_id)) == 2


def test_answering_an_open_survey_without_its_letter_is_a_note_of_the_library(collector):
    """Issue 41.5: the library says it (a ProbanonNote, printed by survey respond), once the
    document is shown; with the letter's digest it says nothing."""
    base, admin, _ = collector
    _, _, sid = _publish(base, admin, population(200, seed=14))
    listed = _letter(base, sid)
    values = {"age": 33.0, "income": 2500.0}
    with pytest.warns(ProbanonNote) as caught:
        assert client.respond(base, sid, values, ANSWERS).status == 201
    assert [str(w.message) for w in caught] == [
        f"not checked against a letter: the survey document is the one the collector lists ({listed}); if you have "
        "a letter, compare its digest or give it with --digest"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert client.respond(base, sid, values, ANSWERS, expected_digest=listed).status == 201


# ---------------------------------------------------------------- letters and the page's files (issue 40.5)

def _spearman(order) -> float:
    """Spearman's rank correlation between positions 0..n-1 and ``order`` (a permutation of them)."""
    n = len(order)
    return 1 - 6 * sum((i - r) ** 2 for i, r in enumerate(order)) / (n * (n * n - 1))


def test_collector_invite_writes_complete_letters_in_a_random_order(collector, monkeypatch, tmp_path, capsys):
    """Issue 40.5: `collector invite` writes one complete letter per invitation (the survey's title,
    the code, the digest, the page's address with ?digest=), never in the order the collector issued
    the codes: 200 letters against the issue order the office client received. Under a uniformly
    random order Spearman's rho has mean 0 and standard deviation 1/sqrt(199) = 0.071, so |rho| >= 0.4
    (5.6 standard deviations) has probability about 2e-8 < 1e-6; the order of issue has rho = 1."""
    from probanon.service import office

    base, admin, _ = collector
    _, _, sid = _publish(base, admin, population(300, seed=10), requires_token=True)
    letter = _letter(base, sid)
    issued, real = [], office.invite

    def recording(*args, **kw):
        codes = real(*args, **kw)
        issued.append(list(codes))
        return codes

    monkeypatch.setattr(office, "invite", recording)
    monkeypatch.setenv("PROBANON_TOKEN", admin)
    out = tmp_path / "letters.txt"
    assert main(["collector", "invite", base, "--survey", str(sid), "--count", "200", "-o", str(out),
                 "--digest", letter]) == 0
    assert "200 invitation letters written" in capsys.readouterr().out
    text = out.read_text()
    letters = re.split(r"^=+ letter \d+ of 200$", text, flags=re.M)
    assert "random order" in letters[0] and len(letters) == 201
    fields = []
    for body in letters[1:]:
        found = dict(re.findall(r"^(Survey|Invitation code|Digest|Address): (.*)$", body, flags=re.M))
        assert found["Survey"] == "Household survey" and found["Digest"] == letter
        assert found["Address"] == f"{base}/respond/{sid}?digest={letter}"
        assert f"--survey {sid} --digest {letter}" in body
        fields.append(found)
    [order] = issued
    codes = [f["Invitation code"] for f in fields]
    assert sorted(codes) == sorted(order) and len(set(codes)) == 200
    rho = _spearman([order.index(c) for c in codes])
    assert abs(rho) < 0.4, rho
    assert _spearman(list(range(200))) == 1  # the order of issue would fail

    # CSV for a mail merge; a digest other than the published one writes nothing and issues nothing
    assert main(["collector", "invite", base, "--survey", str(sid), "--count", "5", "-o", str(tmp_path / "l.csv"),
                 "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO((tmp_path / "l.csv").read_text())))
    assert [set(r) for r in rows] == [{"survey", "title", "code", "digest", "address"}] * 5
    assert sorted(r["code"] for r in rows) == sorted(issued[1]) and {r["digest"] for r in rows} == {letter}
    capsys.readouterr()
    other = letter[:-1] + ("0" if letter[-1] != "0" else "1")
    assert main(["collector", "invite", base, "--survey", str(sid), "--count", "5", "-o", str(tmp_path / "x.txt"),
                 "--digest", other]) == 2
    assert "no letters written" in capsys.readouterr().err
    assert len(issued) == 2 and not (tmp_path / "x.txt").exists()


def test_check_page_detects_a_changed_static_file(collector, capsys):
    """Issue 40.5: the survey document lists the SHA-256 of every file of the page; `survey
    check-page` downloads the page, every file it loads and every file listed, and exits 2 when one
    differs (here a collector serving a changed respond.js, or a page loading a file not listed)."""
    base, admin, _ = collector
    _, _, sid = _publish(base, admin, population(200, seed=11))
    letter = _letter(base, sid)
    args = ["survey", "check-page", base, "--survey", str(sid), "--digest", letter]
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    checked = {line.split()[1] for line in out if line.startswith("ok ")}
    assert {f"/respond/{sid}", "/static/respond.js", "/static/survey.js", "/static/respond.css",
            "/static/favicon.svg", "/static/respond.html"} <= checked
    assert out[-1].startswith(f"the page of survey {sid} runs the")

    def changed_js(path, data):
        return data + b"\n;fetch('/exfiltrate');" if path == "/static/respond.js" else data

    def extra_script(path, data):
        return data.replace(b"</head>", b'<script src="/static/extra.js"></script></head>') \
            if path == f"/respond/{sid}" else data

    for edit, says in ((changed_js, "DIFFERS   /static/respond.js"), (extra_script, "UNLISTED  /static/extra.js")):
        proxy = RewritingProxy(base, edit)
        try:
            assert main(["survey", "check-page", proxy.url, "--survey", str(sid), "--digest", letter]) == 2
        finally:
            proxy.close()
        out, err = capsys.readouterr()
        assert any(line.startswith(says) for line in out.splitlines()), out
        assert err.startswith("probanon: error:") and len(err.strip().splitlines()) == 1
    other = letter[:-1] + ("0" if letter[-1] != "0" else "1")  # not the survey of the letter: nothing compared
    assert main(args[:-1] + [other]) == 2 and "not the survey of your letter" in capsys.readouterr().err


def test_the_page_files_are_compared_with_the_local_package(collector, capsys, monkeypatch, tmp_path):
    """Audit of issue 40, finding 6: the survey document's page hashes are the collector's own
    statement. A collector that runs another respond.js, consistently listed in its document and
    served as listed, passes the comparison with the document alone; `survey check-page` also
    compares the document with this machine's probanon page files and exits 2 on a difference
    (an OTHER line), unless --accept-other-version; `collector invite` refuses to write letters
    (and issues nothing) unless --accept-other-version."""
    from probanon.service import document as documents

    base, admin, database = collector
    local = documents.page_files()
    other_js = (documents.STATIC / "respond.js").read_bytes() + b"\n// another version of the page\n"
    other_hash = "sha256:" + hashlib.sha256(other_js).hexdigest()
    with monkeypatch.context() as m:  # the collector publishes with another version's page files
        m.setattr(documents, "page_files", lambda directory=None: dict(local, **{"respond.js": other_hash}))
        _, _, sid = _publish(base, admin, population(200, seed=14), requires_token=True)
    letter = _letter(base, sid)
    assert call(base, "GET", f"/api/surveys/{sid}/document")[1]["page"]["respond.js"] == other_hash

    def serve_other(path, data):
        return other_js if path == "/static/respond.js" else data

    proxy = RewritingProxy(base, serve_other)
    try:
        args = ["survey", "check-page", proxy.url, "--survey", str(sid), "--digest", letter]
        assert main(args) == 2
        out, err = capsys.readouterr()
        lines = out.splitlines()
        assert f"ok        /static/respond.js  {other_hash}" in lines  # served as its document lists it
        [line] = [x for x in lines if x.startswith("OTHER")]
        assert line.startswith(f"OTHER     respond.js  {other_hash}") and local["respond.js"] in line
        assert "another version of the page" in err and len(err.strip().splitlines()) == 1
        assert main(args + ["--accept-other-version"]) == 0
        out = capsys.readouterr().out
        assert "OTHER     respond.js" in out and "accepted: --accept-other-version" in out.splitlines()[-1]
    finally:
        proxy.close()
    assert main(["survey", "check-page", base, "--survey", str(sid), "--digest", letter]) == 2  # DIFFERS and OTHER
    capsys.readouterr()
    from probanon.service.pagecheck import local_differences

    assert [(d.name, d.listed, d.local) for d in local_differences({"a.js": "sha256:1"}, {"b.js": "sha256:2"})] == \
        [("a.js", "sha256:1", None), ("b.js", None, "sha256:2")]

    from probanon.service import office

    issued, real_invite = [], office.invite
    monkeypatch.setattr(office, "invite", lambda *a, **kw: issued.append(a) or real_invite(*a, **kw))
    monkeypatch.setenv("PROBANON_TOKEN", admin)
    invite = ["collector", "invite", base, "--survey", str(sid), "--count", "3", "-o", str(tmp_path / "l.txt"),
              "--digest", letter]
    assert main(invite) == 2
    err = capsys.readouterr().err.strip()
    assert "other page files than this machine's probanon" in err and "no letters written" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "l.txt").exists() and issued == []  # nothing issued
    assert main(invite + ["--accept-other-version"]) == 0
    assert (tmp_path / "l.txt").read_text().count("Invitation code: ") == 3
