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
