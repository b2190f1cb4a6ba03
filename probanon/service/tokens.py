"""Blind tokens (issue 40.3): invitation codes redeemed for RSA blind signatures, so the collector
verifies a submission's credential without being able to tell which invitation it came from.

The scheme is RSABSSA-SHA384-PSS-Deterministic of RFC 9474 (RSA blind signatures: PSS encoding with
SHA-384, MGF1-SHA-384 and a 48-byte salt, identity message preparation) with the token layout of
RFC 9578 §5.1 (Privacy Pass, token type 0x0002, "Blind RSA (2048-bit)"):

    token_input = token_type (2 bytes, 0x0002) || nonce (32 random bytes)
                  || challenge_digest (32) || token_key_id (32)

with ``challenge_digest = SHA-256("probanon/1 " + the survey's digest)`` and ``token_key_id`` the
SHA-256 of the survey key's SubjectPublicKeyInfo (DER). The flow:

1. the respondent (page or ``probanon survey respond``) draws the nonce, builds ``token_input``
   and blinds it (:func:`blind`, RFC 9474 §4.2);
2. she sends her invitation code and the blinded message to ``POST /api/surveys/ID/issuance``;
   the collector redeems the code once and answers the blind signature (:func:`blind_sign`, §4.3);
3. she unblinds it (:func:`finalize`, §4.4): an ordinary RSASSA-PSS signature over ``token_input``,
   which the collector has never seen;
4. her submission carries ``{"nonce", "signature"}``; the collector rebuilds ``token_input``,
   verifies the signature (:func:`verify`, with ``cryptography``) and spends the nonce.

The blinding factor is uniform and secret, so the blinded message the collector saw at issuance is
statistically independent of the token it later verifies (RFC 9474 §7.3, blindness): nothing stored
at issuance (the code's hash, the blinded message's hash) can be matched to a submission.

Only the RFC's steps are written here, each with its section; the RSA arithmetic is Python's
integers (``pow``: ``cryptography`` has no raw RSA operation, see :func:`blind_sign`, whose
private-key exponentiation is base-blinded against timing), the key generation, key
serialisation and the final PSS verification are ``cryptography``'s. RFC 8017 (PKCS #1 v2.2)
gives EMSA-PSS-ENCODE and MGF1.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from math import gcd

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

ALGORITHM = "RSABSSA-SHA384-PSS-Deterministic"
TOKEN_TYPE = 0x0002  # RFC 9578 §8.2.1: Blind RSA (2048-bit)
MODULUS_BITS = 2048
MODULUS_BYTES = MODULUS_BITS // 8  # Nk of RFC 9474: the length of blinded messages and signatures
PUBLIC_EXPONENT = 65537
SALT_BYTES = 48  # sLen of RSABSSA-SHA384-PSS-*: the hash's output length (RFC 9474 §5)
NONCE_BYTES = 32
TOKEN_INPUT_BYTES = 2 + NONCE_BYTES + 32 + 32
CHALLENGE_PREFIX = "probanon/1 "
_HASH = hashlib.sha384
_HASH_BYTES = 48


class TokenError(ValueError):
    """A malformed or invalid blinded message, signature or token."""


class MalformedToken(TokenError):
    """A token that is not ``{"nonce", "signature"}`` of base64url texts of the right lengths (the
    request is malformed: 422), as opposed to one whose signature does not verify (403)."""


# ---------------------------------------------------------------- encodings (RFC 4648 §5; RFC 8017 §4)

def b64url(data: bytes) -> str:
    """base64url without padding (RFC 4648 §5)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text, length: int | None = None, what: str = "value") -> bytes:
    """The bytes of a base64url text without padding (strict: no padding, no other character, the
    canonical encoding only), of exactly ``length`` bytes when given; else :class:`TokenError`."""
    if not isinstance(text, str) or len(text) > 4096 or len(text) % 4 == 1:
        raise TokenError(f"{what} must be base64url without padding")
    try:
        data = base64.b64decode(text.encode("ascii") + b"=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise TokenError(f"{what} must be base64url without padding") from None
    if b64url(data) != text:  # non-zero trailing bits: another text of the same bytes
        raise TokenError(f"{what} must be base64url without padding")
    if length is not None and len(data) != length:
        raise TokenError(f"{what} must be {length} bytes (base64url)")
    return data


def i2osp(x: int, length: int) -> bytes:
    """I2OSP (RFC 8017 §4.1)."""
    if x < 0 or x >= 256 ** length:
        raise TokenError("integer too large")
    return x.to_bytes(length, "big")


def os2ip(data: bytes) -> int:
    """OS2IP (RFC 8017 §4.2)."""
    return int.from_bytes(data, "big")


# ---------------------------------------------------------------- keys

def new_private_key() -> rsa.RSAPrivateKey:
    """A fresh RSA-2048 key, e = 65537 (one per survey that takes invitations)."""
    return rsa.generate_private_key(public_exponent=PUBLIC_EXPONENT, key_size=MODULUS_BITS)


def private_der(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def load_private(der: bytes) -> rsa.RSAPrivateKey:
    key = serialization.load_der_private_key(bytes(der), password=None)
    if not isinstance(key, rsa.RSAPrivateKey):
        raise TokenError("not an RSA private key")
    return key


def spki(key) -> bytes:
    """The SubjectPublicKeyInfo (DER) of a public or private key."""
    public = key.public_key() if isinstance(key, rsa.RSAPrivateKey) else key
    return public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def public_form(key) -> dict:
    """What the survey description serves under ``"issuer"`` (CONTRACT40)."""
    der = spki(key)
    return {"algorithm": ALGORITHM, "public_key": b64url(der), "key_id": hashlib.sha256(der).hexdigest()}


def load_public_form(form) -> rsa.RSAPublicKey:
    """The public key of an ``"issuer"`` form, checked (algorithm, key id = SHA-256 of the DER, an
    RSA-2048 key with e = 65537), else :class:`TokenError`."""
    if not isinstance(form, dict) or form.get("algorithm") != ALGORITHM:
        raise TokenError(f"the issuer is not {ALGORITHM}")
    der = unb64url(form.get("public_key"), what="the issuer's public key")
    if not hmac.compare_digest(str(form.get("key_id", "")), hashlib.sha256(der).hexdigest()):
        raise TokenError("the issuer's key_id is not the SHA-256 of its public key")
    try:
        key = serialization.load_der_public_key(der)
    except ValueError:
        raise TokenError("the issuer's public key is not a SubjectPublicKeyInfo") from None
    if not isinstance(key, rsa.RSAPublicKey) or key.key_size != MODULUS_BITS \
            or key.public_numbers().e != PUBLIC_EXPONENT:
        raise TokenError(f"the issuer's key is not RSA-{MODULUS_BITS} with e = {PUBLIC_EXPONENT}")
    return key


# ---------------------------------------------------------------- the token (RFC 9578 §5.1)

def challenge_digest(survey_digest: str) -> bytes:
    """SHA-256 of ``"probanon/1 " + digest``: the token's challenge is the survey itself."""
    return hashlib.sha256((CHALLENGE_PREFIX + survey_digest).encode("utf-8")).digest()


def token_input(nonce: bytes, survey_digest: str, key) -> bytes:
    """token_type || nonce || challenge_digest || token_key_id (RFC 9578 §5.1: the message signed)."""
    if len(nonce) != NONCE_BYTES:
        raise TokenError(f"the nonce is {NONCE_BYTES} bytes")
    return (TOKEN_TYPE.to_bytes(2, "big") + nonce + challenge_digest(survey_digest)
            + hashlib.sha256(spki(key)).digest())


# ---------------------------------------------------------------- RFC 8017 steps

def mgf1(seed: bytes, length: int) -> bytes:
    """MGF1 with SHA-384 (RFC 8017 §B.2.1)."""
    out = b"".join(_HASH(seed + i2osp(counter, 4)).digest() for counter in range(-(-length // _HASH_BYTES)))
    return out[:length]


def emsa_pss_encode(message: bytes, em_bits: int, salt: bytes) -> bytes:
    """EMSA-PSS-ENCODE (RFC 8017 §9.1.1) with SHA-384, MGF1-SHA-384 and ``salt`` (sLen = 48)."""
    em_len = -(-em_bits // 8)
    m_hash = _HASH(message).digest()                                        # step 2
    if em_len < _HASH_BYTES + len(salt) + 2:                                # step 3
        raise TokenError("encoding error")
    h = _HASH(b"\x00" * 8 + m_hash + salt).digest()                         # steps 5-6
    db = b"\x00" * (em_len - len(salt) - _HASH_BYTES - 2) + b"\x01" + salt  # steps 7-8
    masked = bytes(a ^ b for a, b in zip(db, mgf1(h, em_len - _HASH_BYTES - 1)))  # steps 9-10
    masked = bytes([masked[0] & (0xFF >> (8 * em_len - em_bits))]) + masked[1:]   # step 11
    return masked + h + b"\xbc"                                             # step 12


# ---------------------------------------------------------------- RFC 9474 steps

@dataclass(frozen=True)
class Blinded:
    """The client's state between :func:`blind` and :func:`finalize`."""

    blinded_msg: bytes
    inv: int
    message: bytes


def blind(key: rsa.RSAPublicKey, message: bytes, salt: bytes | None = None, r: int | None = None) -> Blinded:
    """Blind (RFC 9474 §4.2) of the prepared message (the deterministic variant's Prepare is the
    identity, §4.1). ``salt`` and ``r`` are drawn at random; the tests give the RFC's."""
    numbers = key.public_numbers()
    n, e = numbers.n, numbers.e
    k_len = -(-n.bit_length() // 8)
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    encoded = emsa_pss_encode(message, n.bit_length() - 1, salt)  # step 1
    m = os2ip(encoded)                                           # step 3
    if gcd(m, n) != 1:                                           # step 4
        raise TokenError("invalid input")
    r = secrets.randbelow(n - 1) + 1 if r is None else r         # step 5: random_integer_uniform(1, n)
    try:
        inv = pow(r, -1, n)                                      # step 6
    except ValueError:
        raise TokenError("blinding error") from None
    x = pow(r, e, n)                                             # step 7: RSAVP1(pk, r)
    z = m * x % n                                                # step 8
    return Blinded(i2osp(z, k_len), inv, message)                # step 9


def blind_sign(key: rsa.RSAPrivateKey, blinded_msg: bytes) -> bytes:
    """BlindSign (RFC 9474 §4.3): RSASP1 (RFC 8017 §5.2.1, with the CRT, second form of K), then
    the RFC's check that the signature verifies (RSAVP1 gives back the message; guards against a
    fault in the CRT computation).

    RSASP1 is computed here with Python's integers because ``cryptography`` offers no raw RSA
    private-key operation: its RSA private key only signs with PKCS #1 v1.5 or PSS padding (which
    it applies itself, to a message it hashes) and decrypts OAEP or PKCS #1 v1.5; the blinded
    message is already an encoded, blinded representative that must be exponentiated as it is.
    Python's ``pow`` is not constant time, so the exponentiation is base-blinded (the usual
    countermeasure against timing attacks on the private exponent): a fresh random ``r``, the
    message multiplied by ``r^e``, the root of that computed, and the result multiplied by
    ``r^-1``: ``(m r^e)^d r^-1 = m^d mod n``, the same signature, while the operands whose
    timing the exponentiation could reveal are random."""
    private = key.private_numbers()
    public = private.public_numbers
    n, e = public.n, public.e
    k_len = -(-n.bit_length() // 8)
    if len(blinded_msg) != k_len:
        raise TokenError(f"the blinded message is {k_len} bytes")
    m = os2ip(blinded_msg)                                       # step 1
    if m >= n:                                                   # RSASP1 step 1
        raise TokenError("message representative out of range")
    p, q = private.p, private.q
    while True:                                                  # base blinding (docstring)
        r = secrets.randbelow(n - 2) + 2
        if gcd(r, n) == 1:
            break
    blinded = m * pow(r, e, n) % n
    s1, s2 = pow(blinded, private.dmp1, p), pow(blinded, private.dmq1, q)  # RSASP1 step 2.b.i-ii
    h = (s1 - s2) * private.iqmp % p                             # step 2.b.iv
    s = (s2 + q * h) * pow(r, -1, n) % n                         # step 2.b.v, unblinded
    if pow(s, e, n) != m:                                        # steps 3-4: RSAVP1, m == m'
        raise TokenError("signing failure")
    return i2osp(s, k_len)                                       # step 5


def finalize(key: rsa.RSAPublicKey, state: Blinded, blind_sig: bytes) -> bytes:
    """Finalize (RFC 9474 §4.4): unblind, then RSASSA-PSS-VERIFY (by ``cryptography``); the
    signature, or :class:`TokenError` when the collector's answer does not verify."""
    n = key.public_numbers().n
    k_len = -(-n.bit_length() // 8)
    if len(blind_sig) != k_len:                                  # step 1
        raise TokenError(f"the blind signature is {k_len} bytes")
    z = os2ip(blind_sig)                                         # step 2
    s = z * state.inv % n                                        # step 3
    sig = i2osp(s, k_len)                                        # step 4
    if not verify(key, state.message, sig):                      # step 5
        raise TokenError("the blind signature does not verify with the survey's key")
    return sig


PSS = padding.PSS(mgf=padding.MGF1(hashes.SHA384()), salt_length=SALT_BYTES)


def verify(key: rsa.RSAPublicKey, message: bytes, signature: bytes) -> bool:
    """RSASSA-PSS-VERIFY with SHA-384, MGF1-SHA-384, sLen 48 (RFC 9474 §4.5), by ``cryptography``."""
    try:
        key.verify(signature, message, PSS, hashes.SHA384())
    except InvalidSignature:
        return False
    return True


# ---------------------------------------------------------------- respondent side, whole

def mint(key: rsa.RSAPublicKey, survey_digest: str, nonce: bytes | None = None) -> tuple[Blinded, bytes]:
    """(state, nonce) of a new token for a survey: its input blinded for issuance."""
    nonce = secrets.token_bytes(NONCE_BYTES) if nonce is None else nonce
    return blind(key, token_input(nonce, survey_digest, key)), nonce


def check_token(key: rsa.RSAPublicKey, survey_digest: str, token) -> bytes:
    """The nonce of a submission's ``{"nonce", "signature"}`` whose signature verifies over the
    survey's token input, else :class:`MalformedToken` (its shape or encoding) or
    :class:`TokenError` (its signature)."""
    if not isinstance(token, dict) or set(token) != {"nonce", "signature"}:
        raise MalformedToken("'token' must be {\"nonce\", \"signature\"} (base64url)")
    try:
        nonce = unb64url(token["nonce"], NONCE_BYTES, "the token's nonce")
        signature = unb64url(token["signature"], MODULUS_BYTES, "the token's signature")
    except TokenError as exc:
        raise MalformedToken(str(exc)) from None
    if not verify(key, token_input(nonce, survey_digest, key), signature):
        raise TokenError("the token's signature does not verify with this survey's key")
    return nonce
