"""The respondent's blind RSA (probanon/service/static/blindrsa.js) in headless Chromium: the
published test vector of RFC 9474 Appendix A.3 (RSABSSA-SHA384-PSS-Deterministic) reproduced
exactly, Finalize's refusal of a bad blind signature, and a whole token (RFC 9578 §5.1 token input)
blinded in the browser, signed by Python and verified by `cryptography`."""

import base64
import hashlib
import json
import re
from pathlib import Path

import pytest
from service_support import script_driver, static_server

rsa = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.rsa")
from cryptography.exceptions import InvalidSignature  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import padding  # noqa: E402

VECTOR = Path(__file__).resolve().parent / "data" / "rfc9474_a3.txt"
PSS = padding.PSS(mgf=padding.MGF1(hashes.SHA384()), salt_length=48)
DIGEST = "sha256:" + "ab12" * 16  # a survey's digest, as served in its description


def rfc_vector() -> dict:
    """{name: bytes} of the RFC's Appendix A.3 (a value continues on the lines below its name)."""
    values, name = {}, None
    for line in VECTOR.read_text().splitlines():
        if m := re.fullmatch(r" {3}(\w+) =\s*([0-9a-f]*)", line):
            name = m[1]
            values[name] = m[2]
        elif name and (m := re.fullmatch(r" {3}([0-9a-f]+)", line)):
            values[name] += m[1]
        else:
            name = None
    return {k: bytes.fromhex(v) for k, v in values.items()}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def spki(public_key) -> bytes:
    return public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def token_input(nonce: bytes, survey_digest: str, der: bytes) -> bytes:
    """The contract's token input (RFC 9578 §5.1 layout), written here from the contract's words."""
    challenge = hashlib.sha256(("probanon/1 " + survey_digest).encode()).digest()
    return b"\x00\x02" + nonce + challenge + hashlib.sha256(der).digest()


@pytest.fixture(scope="module")
def static_url():
    yield from static_server()


@pytest.fixture(scope="module")
def driver(static_url):
    yield from script_driver(static_url, "blindrsa.js", "ProbanonBlindRSA")


def run(driver, body: str, *args):
    """The async function body run in the page with B = ProbanonBlindRSA, hex(bytes) -> Uint8Array
    h and Uint8Array -> hex x; its result, or {"error": message} when it throws."""
    script = ("const done = arguments[arguments.length - 1]; const args = Array.from(arguments).slice(0, -1);"
              " const B = ProbanonBlindRSA, h = B.hexDecode, x = B.hexEncode;"
              " (async (...args) => { " + body + " })(...args)"
              ".then(done, (e) => done({error: String(e && e.message || e)}));")
    return driver.execute_async_script(script, *args)


@pytest.fixture(scope="module")
def vector():
    v = rfc_vector()
    n, e = int.from_bytes(v["n"], "big"), int.from_bytes(v["e"], "big")
    assert int.from_bytes(v["p"], "big") * int.from_bytes(v["q"], "big") == n  # the transcription holds
    v["spki"] = spki(rsa.RSAPublicNumbers(e, n).public_key())
    return v


def test_rfc9474_a3_vector(driver, vector):
    v = vector
    got = run(driver, """
        const [spki, msg, salt, inv, blindSig] = args.map(h);
        const pk = await B.importPublicKey(spki);
        const encoded = await B.emsaPssEncode(msg, pk.n.toString(2).length - 1, salt);
        const b = await B.blind(pk, msg, {salt: salt, inv: B.bytesToInt(inv)});
        const sig = await B.finalize(pk, msg, blindSig, b.inv);
        return {n: pk.n.toString(16), e: pk.e.toString(16), modulusLen: pk.modulusLen, encoded: x(encoded),
                blinded: x(b.blindedMsg), inv: b.inv.toString(16), sig: x(sig), keyId: x(pk.keyId)};""",
              *(v[k].hex() for k in ("spki", "msg", "salt", "inv", "blind_sig")))
    assert "error" not in got, got
    assert int(got["n"], 16) == int.from_bytes(v["n"], "big") and int(got["e"], 16) == 65537
    assert got["modulusLen"] == 512  # the RFC's vectors use a 4096-bit key
    assert got["encoded"] == v["encoded_msg"].hex()  # EMSA-PSS-ENCODE (RFC 8017 §9.1.1)
    assert got["blinded"] == v["blinded_msg"].hex()  # Blind (RFC 9474 §4.2)
    assert int(got["inv"], 16) == int.from_bytes(v["inv"], "big")
    assert got["sig"] == v["sig"].hex()  # Finalize (§4.4)
    assert got["keyId"] == hashlib.sha256(v["spki"]).hexdigest()
    # the blind given as r instead of its inverse gives the same blinded message
    r = pow(int.from_bytes(v["inv"], "big"), -1, int.from_bytes(v["n"], "big"))
    again = run(driver, """
        const [spki, msg, salt] = args.slice(0, 3).map(h);
        const pk = await B.importPublicKey(spki);
        const b = await B.blind(pk, msg, {salt: salt, r: BigInt("0x" + args[3])});
        return x(b.blindedMsg);""", v["spki"].hex(), v["msg"].hex(), v["salt"].hex(), format(r, "x"))
    assert again == v["blinded_msg"].hex()


def test_finalize_refuses_a_bad_blind_signature(driver, vector):
    v = vector
    bad = bytearray(v["blind_sig"])
    bad[100] ^= 1
    results = run(driver, """
        const [spki, msg, inv] = args.slice(0, 3).map(h);
        const pk = await B.importPublicKey(spki);
        const out = [];
        for (const blindSig of args.slice(3)) {
          try { out.push(x(await B.finalize(pk, msg, h(blindSig), B.bytesToInt(inv)))); }
          catch (e) { out.push(e.message); }
        }
        return out;""", v["spki"].hex(), v["msg"].hex(), v["inv"].hex(),
                  bytes(bad).hex(), v["blind_sig"][1:].hex(), v["n"].hex(), v["blind_sig"].hex(),
                  v["blind_sig"].hex()[:-2] + "00")
    assert results == ["invalid signature", "unexpected input size", "invalid signature", v["sig"].hex(),
                       "invalid signature"]
    # another message under the right blind signature is refused too
    other = run(driver, """
        const [spki, blindSig, inv] = args.map(h);
        const pk = await B.importPublicKey(spki);
        return await B.finalize(pk, new Uint8Array([1, 2, 3]), blindSig, B.bytesToInt(inv));""",
                v["spki"].hex(), v["blind_sig"].hex(), v["inv"].hex())
    assert other == {"error": "invalid signature"}


@pytest.fixture(scope="module")
def issuer_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def issuer_form(key) -> dict:
    der = spki(key.public_key())
    return {"algorithm": "RSABSSA-SHA384-PSS-Deterministic", "public_key": b64url(der),
            "key_id": hashlib.sha256(der).hexdigest()}


def test_a_token_blinded_in_the_browser_verifies_in_python(driver, issuer_key):
    """The browser blinds a fresh token input (random nonce, salt and blind); Python signs the
    blinded message with the raw RSA private operation (RFC 9474 §4.3 BlindSign); the browser
    finalizes; `cryptography` verifies the signature over the token input it builds itself."""
    issuer = issuer_form(issuer_key)
    d, n = issuer_key.private_numbers().d, issuer_key.public_key().public_numbers().n
    requested = run(driver, """
        const pk = await B.importIssuer(args[0]);
        window.pending = [];
        const out = [];
        for (let i = 0; i < 3; i++) {
          const req = await B.request(pk, args[1]);
          window.pending.push(req);
          out.push({nonce: B.b64urlEncode(req.nonce), blinded: B.b64urlEncode(req.blindedMsg)});
        }
        return out;""", issuer, DIGEST)
    assert "error" not in requested, requested
    assert len({r["nonce"] for r in requested}) == 3 and len({r["blinded"] for r in requested}) == 3
    der = unb64url(issuer["public_key"])
    for r in requested:
        blinded = unb64url(r["blinded"])
        assert len(blinded) == 256 and len(unb64url(r["nonce"])) == 32
        assert int.from_bytes(blinded, "big") < n
        # the blinded message says nothing the collector could verify: not a PSS encoding of the input
        with pytest.raises(InvalidSignature):
            issuer_key.public_key().verify(blinded, token_input(unb64url(r["nonce"]), DIGEST, der), PSS, hashes.SHA384())
    blind_sigs = [b64url(pow(int.from_bytes(unb64url(r["blinded"]), "big"), d, n).to_bytes(256, "big"))
                  for r in requested]
    tokens = run(driver, """
        const pk = await B.importIssuer(args[0]);
        const out = [];
        for (const [i, req] of window.pending.entries()) {
          out.push(await B.token(pk, args[1], req.nonce, B.b64urlDecode(args[2][i]), req.inv));
        }
        return out;""", issuer, DIGEST, blind_sigs)
    assert "error" not in tokens, tokens
    for r, tok in zip(requested, tokens):
        assert set(tok) == {"nonce", "signature"} and tok["nonce"] == r["nonce"]
        assert re.fullmatch(r"[A-Za-z0-9_-]{43}", tok["nonce"]) and re.fullmatch(r"[A-Za-z0-9_-]{342}", tok["signature"])
        signature = unb64url(tok["signature"])
        issuer_key.public_key().verify(signature, token_input(unb64url(tok["nonce"]), DIGEST, der), PSS, hashes.SHA384())
        assert signature != unb64url(r["blinded"])  # unblinded: the collector never saw this value
        with pytest.raises(InvalidSignature):  # bound to the survey's digest
            issuer_key.public_key().verify(signature, token_input(unb64url(tok["nonce"]), "sha256:" + "00" * 32, der),
                                           PSS, hashes.SHA384())
    # a blind signature for another request does not finalize
    crossed = run(driver, """
        const pk = await B.importIssuer(args[0]);
        const req = window.pending[0];
        return await B.token(pk, args[1], req.nonce, B.b64urlDecode(args[2]), req.inv);""", issuer, DIGEST, blind_sigs[1])
    assert crossed == {"error": "invalid signature"}


def test_token_input_layout(driver, issuer_key):
    issuer = issuer_form(issuer_key)
    nonce = bytes(range(32))
    got = run(driver, """
        const pk = await B.importIssuer(args[0]);
        return x(await B.tokenInput(h(args[1]), args[2], pk.keyId));""", issuer, nonce.hex(), DIGEST)
    assert bytes.fromhex(got) == token_input(nonce, DIGEST, unb64url(issuer["public_key"]))
    assert len(bytes.fromhex(got)) == 2 + 32 + 32 + 32


def test_issuer_form_is_checked(driver, issuer_key):
    issuer = issuer_form(issuer_key)
    other = issuer_form(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    small = issuer_form(rsa.generate_private_key(public_exponent=65537, key_size=1024))
    cases = [dict(issuer, algorithm="RSABSSA-SHA384-PSS-Randomized"),
             dict(issuer, key_id=other["key_id"]),
             dict(issuer, public_key=issuer["public_key"][:-8]),
             dict(issuer, public_key="not base64url!"),
             small, None]
    errors = run(driver, """
        const out = [];
        for (const issuer of args[0]) {
          try { await B.importIssuer(issuer); out.push(null); } catch (e) { out.push(e.message); }
        }
        return out;""", cases)
    assert errors[0] == 'the token issuer uses "RSABSSA-SHA384-PSS-Randomized", not RSABSSA-SHA384-PSS-Deterministic'
    assert errors[1] == "the token issuer's key id does not match its public key"
    assert errors[2] == "the token issuer's public key is not readable"
    assert errors[3].startswith("the token issuer's public key is not readable: not base64url text")
    assert errors[4] == "the token issuer's key is not a 2048-bit RSA key"
    assert errors[5] == "the survey names no token issuer"
    assert run(driver, "const pk = await B.importIssuer(args[0]); return pk.modulusLen;", issuer) == 256


def test_base64url(driver):
    samples = [b"", b"\x00", b"\xff\xfe", bytes(range(256)), b"\xfb\xff\xbf"]
    got = run(driver, "return args[0].map((s) => B.b64urlEncode(h(s)));", [s.hex() for s in samples])
    assert got == [b64url(s) for s in samples]
    back = run(driver, "return args[0].map((s) => x(B.b64urlDecode(s)));", got)
    assert back == [s.hex() for s in samples]
    refused = run(driver, """
        return args[0].map((s) => { try { B.b64urlDecode(s); return null; } catch (e) { return e.message; } });""",
                  ["a", "ab+c", "ab/c", "abc=", "a b"])
    assert all(m and m.startswith("not base64url text") for m in refused)


def test_the_transcribed_vector_agrees_with_the_collectors_copy(vector):
    """tests/data/rfc9474_a3.txt (from the RFC's text) and the collector's copy of the same vector
    (tests/data/rfc9474_pss_deterministic.json, from another source) hold the same values."""
    other = Path(__file__).resolve().parent / "data" / "rfc9474_pss_deterministic.json"
    if not other.exists():
        pytest.skip("the collector's copy of the vector is not in this tree")
    theirs = json.loads(other.read_text())
    for name in ("p", "q", "n", "e", "msg", "salt", "encoded_msg", "inv", "blinded_msg", "blind_sig", "sig"):
        assert int(theirs[name], 16) == int.from_bytes(vector[name], "big"), name


def test_the_browser_and_the_python_reference_agree(driver, issuer_key):
    """blindrsa.js against probanon/service/tokens.py (the collector's and `survey respond`'s
    Python): the same nonce, salt and blind give the same blinded message; the collector's
    BlindSign of a browser-blinded message finalizes in the browser to a token the collector accepts;
    a Python-blinded message finalizes to the same signature in both."""
    tokens = pytest.importorskip("probanon.service.tokens")
    issuer = tokens.public_form(issuer_key)
    public = tokens.load_public_form(issuer)
    n = public.public_numbers().n
    nonce, salt = bytes(range(1, 33)), bytes(range(100, 148))
    r = int.from_bytes(hashlib.sha512(b"a blind").digest() * 4, "big") % n
    ours = run(driver, """
        const pk = await B.importIssuer(args[0]);
        const req = await B.request(pk, args[1], {nonce: h(args[2]), salt: h(args[3]), r: BigInt("0x" + args[4])});
        window.crossed = req;
        return x(req.blindedMsg);""", issuer, DIGEST, nonce.hex(), salt.hex(), format(r, "x"))
    state = tokens.blind(public, tokens.token_input(nonce, DIGEST, public), salt=salt, r=r)
    assert ours == state.blinded_msg.hex()

    requested = run(driver, """
        const pk = await B.importIssuer(args[0]);
        window.crossed = await B.request(pk, args[1]);
        return B.b64urlEncode(window.crossed.blindedMsg);""", issuer, DIGEST)
    blind_sig = tokens.blind_sign(issuer_key, tokens.unb64url(requested, 256))
    token = run(driver, """
        const pk = await B.importIssuer(args[0]);
        return await B.token(pk, args[1], window.crossed.nonce, B.b64urlDecode(args[2]), window.crossed.inv);""",
                issuer, DIGEST, tokens.b64url(blind_sig))
    assert "error" not in token, token
    assert tokens.check_token(public, DIGEST, token) == tokens.unb64url(token["nonce"], 32)
    with pytest.raises(tokens.TokenError):
        tokens.check_token(public, "sha256:" + "cd" * 32, token)

    state, nonce = tokens.mint(public, DIGEST)
    blind_sig = tokens.blind_sign(issuer_key, state.blinded_msg)
    theirs = tokens.finalize(public, state, blind_sig)
    ours = run(driver, """
        const pk = await B.importIssuer(args[0]);
        return x(await B.finalize(pk, await B.tokenInput(h(args[1]), args[2], pk.keyId), h(args[3]), BigInt("0x" + args[4])));""",
               issuer, nonce.hex(), DIGEST, blind_sig.hex(), format(state.inv, "x"))
    assert ours == theirs.hex()
