"""Blind tokens (issue 40.3): the RFC 9474 steps against the RFC's published test vector, the
issuance route (a code redeemed once, idempotent for the same blinded message), token-carrying
submissions (forged, replayed, of another survey), and the WAL replay attack that linked every
invitation letter to its row before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("cryptography")

from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: E402

from probanon.service import tokens  # noqa: E402

VECTOR = json.loads((Path(__file__).parent / "data" / "rfc9474_pss_deterministic.json").read_text())


def _int(text: str) -> int:
    return int(text, 16)


def _vector_key():
    v = VECTOR
    p, q, e, d = _int(v["p"]), _int(v["q"]), _int(v["e"]), _int(v["d"])
    numbers = rsa.RSAPrivateNumbers(p, q, d, rsa.rsa_crt_dmp1(d, p), rsa.rsa_crt_dmq1(d, q), rsa.rsa_crt_iqmp(p, q),
                                    rsa.RSAPublicNumbers(e, p * q))
    return numbers.private_key()


def test_rfc9474_vector_pss_deterministic():
    """Every intermediate value of RFC 9474 Appendix A's RSABSSA-SHA384-PSS-Deterministic vector."""
    v = VECTOR
    assert v["name"] == tokens.ALGORITHM and v["msg_prefix"] == "" and v["input_msg"] == v["msg"]
    key = _vector_key()
    public = key.public_key()
    assert public.public_numbers().n == _int(v["n"])
    msg, salt = bytes.fromhex(v["msg"]), bytes.fromhex(v["salt"])
    assert len(salt) == _int(v["sLen"]) == tokens.SALT_BYTES
    n = _int(v["n"])
    assert tokens.emsa_pss_encode(msg, n.bit_length() - 1, salt).hex() == v["encoded_msg"]
    inv = _int(v["inv"])
    state = tokens.blind(public, msg, salt=salt, r=pow(inv, -1, n))
    assert state.inv == inv
    assert state.blinded_msg.hex() == v["blinded_msg"]
    blind_sig = tokens.blind_sign(key, state.blinded_msg)
    assert blind_sig.hex() == v["blind_sig"]
    sig = tokens.finalize(public, state, blind_sig)
    assert sig.hex() == v["sig"]
    assert tokens.verify(public, msg, sig)
    assert not tokens.verify(public, msg[:-1] + bytes([msg[-1] ^ 1]), sig)


def test_blind_sign_refuses_out_of_range_and_bad_lengths():
    key = _vector_key()
    n = key.public_key().public_numbers().n
    size = (n.bit_length() + 7) // 8
    with pytest.raises(tokens.TokenError, match="out of range"):
        tokens.blind_sign(key, n.to_bytes(size, "big"))
    with pytest.raises(tokens.TokenError):
        tokens.blind_sign(key, b"\x01" * (size - 1))
    state = tokens.blind(key.public_key(), b"message")
    with pytest.raises(tokens.TokenError, match="does not verify"):
        tokens.finalize(key.public_key(), state, (12345).to_bytes(size, "big"))


def test_blind_sign_blinds_the_base_of_its_exponentiations(monkeypatch):
    """Audit finding 7: Python's pow is not constant time, so RSASP1 exponentiates m r^e for a
    fresh random r, never the blinded message itself; the signature is the RFC's all the same."""
    import builtins

    key = _vector_key()
    private = key.private_numbers()
    m = bytes.fromhex(VECTOR["blinded_msg"])
    bases = []

    def recording(base, exp, mod=None):
        if exp in (private.dmp1, private.dmq1):
            bases.append(base)
        return builtins.pow(base, exp, mod)

    monkeypatch.setattr(tokens, "pow", recording, raising=False)
    signatures = {tokens.blind_sign(key, m) for _ in range(3)}
    assert signatures == {bytes.fromhex(VECTOR["blind_sig"])}
    assert len(bases) == 6 and int.from_bytes(m, "big") not in bases and len(set(bases)) == 3  # one per signature


def test_fresh_key_round_trip_and_public_form():
    key = tokens.new_private_key()
    form = tokens.public_form(key)
    assert form["algorithm"] == "RSABSSA-SHA384-PSS-Deterministic" and len(form["key_id"]) == 64
    public = tokens.load_public_form(form)
    digest = "sha256:" + "ab" * 32
    state, nonce = tokens.mint(public, digest)
    assert len(state.blinded_msg) == 256
    sig = tokens.finalize(public, state, tokens.blind_sign(tokens.load_private(tokens.private_der(key)),
                                                           state.blinded_msg))
    token = {"nonce": tokens.b64url(nonce), "signature": tokens.b64url(sig)}
    assert tokens.check_token(public, digest, token) == nonce
    with pytest.raises(tokens.TokenError):  # another survey's digest: another token input
        tokens.check_token(public, "sha256:" + "cd" * 32, token)
    with pytest.raises(tokens.TokenError):  # another key
        tokens.check_token(tokens.new_private_key().public_key(), digest, token)
    for bad in ({**form, "key_id": "0" * 64}, {**form, "algorithm": "RSABSSA-SHA384-PSS-Randomized"},
                {**form, "public_key": form["public_key"] + "="}):
        with pytest.raises(tokens.TokenError):
            tokens.load_public_form(bad)


def test_base64url_is_strict():
    assert tokens.unb64url(tokens.b64url(b"\xff\xfe"), 2) == b"\xff\xfe"
    for bad in ("//4", "__4=", "__5", "_", 12, "a b"):
        with pytest.raises(tokens.TokenError):
            tokens.unb64url(bad)


# ---------------------------------------------------------------- the collector: issuance and spending

import base64  # noqa: E402
import hashlib  # noqa: E402
import secrets  # noqa: E402

import sqlalchemy as sa  # noqa: E402
from service_support import call, design_spec, new_key, population, redeem, survey_body  # noqa: E402

from probanon.service import db  # noqa: E402

_SEEDS = iter(range(7000, 8000))
REFUSED_CODE = "unknown invitation code, or one already redeemed"


def _publish(base, admin, **changes):
    _, text = design_spec(population(60, seed=next(_SEEDS)), k=3)
    status, created = call(base, "POST", "/api/admin/surveys", survey_body(text, **changes), token=admin)
    assert status == 201, created
    info = call(base, "GET", f"/api/surveys/{created['id']}")[1]
    return info


def _codes(base, admin, survey, count):
    status, body = call(base, "POST", f"/api/admin/surveys/{survey['id']}/tokens", {"count": count}, token=admin)
    assert status == 200, body
    return body["tokens"]


def _issue(base, survey, code, blinded: bytes):
    return call(base, "POST", f"/api/surveys/{survey['id']}/issuance",
                {"code": code, "blinded_msg": tokens.b64url(blinded)})


def _body(survey, token=None, **changes):
    body = {"digest": survey["digest"], "cell": 0, "answers": {"happy": 4, "region": "south"},
            "idempotency_key": new_key(), **changes}
    if token is not None:
        body["token"] = token
    return body


def _submit(base, survey, body):
    """(status, answer); a stored submission's receipt (issue 40.10, tests/test_service_close.py)
    is checked for its shape and left out."""
    status, reply = call(base, "POST", f"/api/surveys/{survey['id']}/submissions", body)
    if status in (200, 201) and isinstance(reply, dict):
        receipt = reply.pop("receipt")
        assert set(receipt) == {"survey", "cell", "answers_sha256", "key_sha256", "row_digest", "signature"}
    return status, reply


def _dump(url) -> dict:
    engine = db.connect(url)
    try:
        with engine.connect() as conn:
            return {t: sorted(map(repr, conn.execute(sa.text(f'SELECT * FROM "{t}"')).all()))
                    for t in sorted(sa.inspect(conn).get_table_names())}
    finally:
        engine.dispose()


def test_a_survey_with_invitations_publishes_its_issuer_and_keeps_the_private_key(collector):
    base, admin, url = collector
    survey = _publish(base, admin, requires_token=True)
    issuer = survey["issuer"]
    assert set(issuer) == {"algorithm", "public_key", "key_id"} and issuer["algorithm"] == tokens.ALGORITHM
    key = tokens.load_public_form(issuer)
    assert key.key_size == 2048 and key.public_numbers().e == 65537
    assert _publish(base, admin, open=True)["issuer"] is None
    engine = db.connect(url)
    try:
        with engine.connect() as conn:
            row = conn.execute(sa.select(db.issuer_keys).where(db.issuer_keys.c.survey_id == survey["id"])).one()
    finally:
        engine.dispose()
    private = tokens.load_private(row.private_key)
    assert tokens.public_form(private) == issuer and bytes(row.public_key) == tokens.spki(private)
    served = b"".join(call(base, "GET", path)[1] if isinstance(call(base, "GET", path)[1], bytes)
                      else json.dumps(call(base, "GET", path)[1]).encode()
                      for path in ("/api/surveys", f"/api/surveys/{survey['id']}", f"/api/surveys/{survey['id']}/spec",
                                   "/openapi.json"))
    d = private.private_numbers()
    for secret in (bytes(row.private_key), d.d.to_bytes(256, "big"), d.p.to_bytes(128, "big")):
        for form in (secret, base64.b64encode(secret)[:40], tokens.b64url(secret)[:40].encode(), secret.hex()[:40].encode()):
            assert form not in served


def test_issuance_redeems_a_code_once_and_answers_a_retry_alike(collector):
    base, admin, url = collector
    survey, other = _publish(base, admin, requires_token=True), _publish(base, admin, requires_token=True)
    key = tokens.load_public_form(survey["issuer"])
    code, spare = _codes(base, admin, survey, 2)
    (foreign,) = _codes(base, admin, other, 1)
    state, nonce = tokens.mint(key, survey["digest"])
    status, first = _issue(base, survey, code, state.blinded_msg)
    assert status == 200 and set(first) == {"blind_sig"}
    assert _issue(base, survey, code, state.blinded_msg) == (200, first)  # a lost answer, asked again
    before = _dump(url)
    another, _ = tokens.mint(key, survey["digest"])
    refusals = [_issue(base, survey, code, another.blinded_msg),          # redeemed, another message
                _issue(base, survey, "x" + code[1:], another.blinded_msg),  # unknown
                _issue(base, survey, foreign, another.blinded_msg),         # another survey's code
                _issue(base, survey, admin, another.blinded_msg)]           # no invitation at all
    assert refusals == [(403, {"detail": REFUSED_CODE})] * 4  # one answer: no oracle
    assert _dump(url) == before
    # what the redemption stored: the code's hash and the blinded message's hash, nothing else
    # and the blind signature answered (audit finding 7: a retry gets it without a new signing)
    engine = db.connect(url)
    try:
        with engine.connect() as conn:
            redeemed = [tuple(r) for r in conn.execute(sa.select(db.redemptions))]
    finally:
        engine.dispose()
    assert [(i, c, b, bytes(s)) for i, c, b, s in redeemed] == [
        (survey["id"], hashlib.sha256(code.encode()).hexdigest(), hashlib.sha256(state.blinded_msg).hexdigest(),
         tokens.unb64url(first["blind_sig"], 256))]
    assert not any(hashlib.sha256(code.encode()).hexdigest() in r for r in before["tokens"])  # the code is gone
    signature = tokens.finalize(key, state, tokens.unb64url(first["blind_sig"], 256))
    token = {"nonce": tokens.b64url(nonce), "signature": tokens.b64url(signature)}
    assert _submit(base, survey, _body(survey, token)) == (201, {"status": "stored"})
    assert _submit(base, other, _body(other, token))[0] == 403  # another survey's key and digest
    assert _issue(base, survey, spare, another.blinded_msg)[0] == 200


def test_a_replayed_issuance_is_answered_from_storage_without_signing_again(collector, monkeypatch):
    """Audit finding 7: the same (code, blinded message) again is answered with the blind
    signature stored at the redemption: no private-key operation (a CPU lever) per replay."""
    from probanon.service import tokens as module

    base, admin, url = collector
    survey = _publish(base, admin, requires_token=True)
    key = tokens.load_public_form(survey["issuer"])
    (code,) = _codes(base, admin, survey, 1)
    signed = []
    sign = module.blind_sign
    monkeypatch.setattr(module, "blind_sign", lambda k, m: signed.append(1) or sign(k, m))
    state, nonce = tokens.mint(key, survey["digest"])
    answers = [_issue(base, survey, code, state.blinded_msg) for _ in range(5)]
    assert answers[0][0] == 200 and answers == [answers[0]] * 5
    assert len(signed) == 1, f"signed {len(signed)} times for one redemption"
    another, _ = tokens.mint(key, survey["digest"])
    assert _issue(base, survey, code, another.blinded_msg) == (403, {"detail": REFUSED_CODE})
    assert _issue(base, survey, "x" + code[1:], another.blinded_msg) == (403, {"detail": REFUSED_CODE})
    assert len(signed) == 1  # nor for a refused code
    signature = tokens.finalize(key, state, tokens.unb64url(answers[0][1]["blind_sig"], 256))
    token = {"nonce": tokens.b64url(nonce), "signature": tokens.b64url(signature)}
    assert _submit(base, survey, _body(survey, token)) == (201, {"status": "stored"})


@pytest.mark.parametrize("body, status", [
    ({"code": "c", "blinded_msg": "A" * 343}, 422),                     # 257 bytes
    ({"code": "c", "blinded_msg": "B" * 342}, 422),                     # 256 bytes, non-zero trailing bits
    ({"code": "c"}, 422),
    ({"blinded_msg": "AA"}, 422),
    ({"code": "c", "blinded_msg": "AA", "extra": 1}, 422),
    ({"code": "", "blinded_msg": None}, 422),
    ({"code": 5, "blinded_msg": None}, 422),
    ({"code": "c" * 129, "blinded_msg": None}, 422),
    ({"code": "c", "blinded_msg": tokens.b64url(b"\x01" * 255)}, 422),
    ({"code": "c", "blinded_msg": tokens.b64url(b"\x01" * 257)}, 422),
    ({"code": "c", "blinded_msg": tokens.b64url(b"\x01" * 256) + "="}, 422),
    ({"code": "c", "blinded_msg": base64.b64encode(b"\xfb" * 256).decode()}, 422),  # + and /: not base64url
    ({"code": "c", "blinded_msg": tokens.b64url(b"\xff" * 256)}, 422),  # not below the modulus
    ([1, 2], 422),
])
def test_malformed_issuance_is_refused_and_changes_nothing(collector, body, status):
    base, admin, url = collector
    survey = _publish(base, admin, requires_token=True)
    (code,) = _codes(base, admin, survey, 1)
    if isinstance(body, dict):
        body = {k: (code if v == "c" else v) for k, v in body.items()}
        if body.get("blinded_msg", "") is None:
            body["blinded_msg"] = tokens.b64url(secrets.token_bytes(255) + b"\x00")
    before = _dump(url)
    got, answer = call(base, "POST", f"/api/surveys/{survey['id']}/issuance", body)
    assert got == status and set(answer) == {"detail"} and code not in answer["detail"], answer
    assert _dump(url) == before
    state, _ = tokens.mint(tokens.load_public_form(survey["issuer"]), survey["digest"])
    assert _issue(base, survey, code, state.blinded_msg)[0] == 200  # the code was not spent


def test_issuance_of_open_closed_and_unknown_surveys(collector):
    base, admin, url = collector
    open_survey = _publish(base, admin, open=True)
    later = _publish(base, admin, requires_token=True, opens="2098-01-01T00:00:00Z", closes="2099-01-01T00:00:00Z")
    closing = _publish(base, admin, requires_token=True)
    (code,) = _codes(base, admin, closing, 1)
    state, _ = tokens.mint(tokens.load_public_form(closing["issuer"]), closing["digest"])
    assert call(base, "POST", f"/api/admin/surveys/{closing['id']}/close", {}, token=admin)[0] == 200
    blinded = tokens.b64url(state.blinded_msg)
    before = _dump(url)
    for survey_id, status in ((open_survey["id"], 409), (later["id"], 409), (closing["id"], 409), (999999, 404),
                              (2**40, 422)):
        got, answer = call(base, "POST", f"/api/surveys/{survey_id}/issuance", {"code": code, "blinded_msg": blinded})
        assert got == status and set(answer) == {"detail"}, answer
    assert _dump(url) == before


def test_token_carrying_submissions(collector):
    """Forged, tampered, spent, of another survey, missing: 403; malformed (shape, encoding,
    length: audit finding 11) or on an open survey: 422; the same idempotency key again:
    "already stored"; a spent nonce under another key: 403."""
    base, admin, url = collector
    survey, other = _publish(base, admin, requires_token=True), _publish(base, admin, requires_token=True)
    open_survey = _publish(base, admin, open=True)
    code, second = _codes(base, admin, survey, 2)
    token = redeem(base, survey["id"], code)
    foreign = redeem(base, other["id"], _codes(base, admin, other, 1)[0])
    nonce = tokens.unb64url(token["nonce"], 32)
    flipped = bytearray(tokens.unb64url(token["signature"], 256))
    flipped[-1] ^= 1
    forged = [None,
              {"nonce": tokens.b64url(secrets.token_bytes(32)), "signature": tokens.b64url(secrets.token_bytes(256))},
              {"nonce": token["nonce"], "signature": tokens.b64url(bytes(flipped))},
              {"nonce": tokens.b64url(bytes([nonce[0] ^ 1]) + nonce[1:]), "signature": token["signature"]},
              foreign]
    malformed = ["a-code", 5, [token["nonce"]], {"nonce": token["nonce"]}, {**token, "extra": 1},
                 {"nonce": token["nonce"], "signature": token["signature"] + "A"},      # 257 bytes
                 {"nonce": token["nonce"], "signature": token["signature"][:-4]},       # 253 bytes
                 {"nonce": token["nonce"] + "=", "signature": token["signature"]},      # padding
                 {"nonce": token["nonce"].replace(token["nonce"][0], "+"), "signature": token["signature"]},
                 {"nonce": 7, "signature": token["signature"]}, {"nonce": token["nonce"], "signature": None}]
    before = _dump(url)
    for bad in forged:
        body = _body(survey) if bad is None else _body(survey, bad)
        got, answer = _submit(base, survey, body)
        assert got == 403 and set(answer) == {"detail"}, (bad, answer)
    for bad in malformed:
        got, answer = _submit(base, survey, _body(survey, bad))
        assert got == 422 and set(answer) == {"detail"} and "\n" not in answer["detail"], (bad, answer)
    assert _submit(base, open_survey, _body(open_survey, token))[0] == 422
    assert _dump(url) == before
    stored = _body(survey, token)
    assert _submit(base, survey, stored) == (201, {"status": "stored"})
    assert _submit(base, survey, stored) == (200, {"status": "already stored"})
    got, answer = _submit(base, survey, _body(survey, token, cell=1))
    assert got == 403 and "spent" in answer["detail"]
    after = _dump(url)
    assert after["spent_tokens"] == [repr((survey["id"], hashlib.sha256(nonce).hexdigest()))]
    assert len(after["submissions"]) == 1
    # the second invitation still works, and the release report counts the codes redeemed
    assert _submit(base, survey, _body(survey, redeem(base, survey["id"], second))) == (201, {"status": "stored"})
    assert call(base, "POST", f"/api/admin/surveys/{survey['id']}/close", {}, token=admin)[0] == 200
    _, analyst = call(base, "POST", "/api/admin/analysts", {}, token=admin)
    report = call(base, "GET", f"/api/surveys/{survey['id']}/release/report", token=analyst["token"])[1]
    assert report["access"] == {"invitations": True, "frame": report["access"]["frame"], "issued": 2, "used": 2}


def test_one_token_sent_at_once_under_many_keys_stores_one_row(collector):
    """Requests in one commit batch: a token under eight idempotency keys is spent once."""
    import concurrent.futures

    base, admin, url = collector
    survey = _publish(base, admin, requires_token=True)
    token = redeem(base, survey["id"], _codes(base, admin, survey, 1)[0])
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: _submit(base, survey, _body(survey, token))[0], range(8)))
    assert sorted(answers) == [201] + [403] * 7
    assert len(_dump(url)["submissions"]) == 1


def test_a_spent_token_cannot_be_freed_in_the_database(collector):
    """Deleting a spent nonce would admit its token twice: the table refuses UPDATE, DELETE (and
    TRUNCATE on PostgreSQL), whoever sends the SQL."""
    base, admin, url = collector
    survey = _publish(base, admin, requires_token=True)
    token = redeem(base, survey["id"], _codes(base, admin, survey, 1)[0])
    assert _submit(base, survey, _body(survey, token))[0] == 201
    engine = db.connect(url)
    try:
        statements = ["UPDATE spent_tokens SET nonce_hash = 'x'", "DELETE FROM spent_tokens"]
        if engine.dialect.name == "postgresql":
            statements.append("TRUNCATE spent_tokens")
        for statement in statements:
            with pytest.raises(sa.exc.DBAPIError, match="a spent token stays spent"), engine.begin() as conn:
                conn.execute(sa.text(statement))
    finally:
        engine.dispose()
    assert _submit(base, survey, _body(survey, token))[0] == 403
