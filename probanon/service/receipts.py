"""Receipts and the hash chain of the stored rows (issue 40.10): a respondent can prove that the
collector took her submission, and check that the release counted it; anyone holding an earlier
release report can tell a deleted or inserted row.

A stored row's canonical form is the UTF-8 text (each line ends with a line feed)::

    probanon/1 row
    survey <survey id, decimal>
    key <SHA-256 of the idempotency key as sent, lower-case hex>
    cell <cell, decimal>
    answers <SHA-256 of the canonical answers, lower-case hex>

where the canonical answers are the JSON text the collector stores: the answers object with its
keys sorted, ``", "`` and ``": "`` as separators, non-ASCII escaped (\\uXXXX), numbers as Python's
``json.dumps`` writes them (``json.dumps(answers, sort_keys=True)``). Its **row digest** is the
SHA-256 of these bytes.

**Receipt.** At publication each survey gets an Ed25519 key pair (RFC 8032); the public key is in
the survey's description as ``"receipt_key"`` (base64url without padding of the raw 32 bytes). The
201 answer to a stored submission carries ``"receipt": {"survey", "cell", "answers_sha256",
"key_sha256", "row_digest", "signature"}``; ``signature`` is base64url of the Ed25519 signature of
the row's canonical bytes. To verify: hash your own idempotency key and your canonical answers,
rebuild the canonical bytes above, check the signature with the survey's ``receipt_key``
(``cryptography``'s ``Ed25519PublicKey.verify``, or any RFC 8032 implementation).

**Chain.** The release report (every release, interim or final) publishes ``"chain"``: the row
digests of every stored row of the survey in the order of their key hash (random: never the order
of arrival), and the head ``h_n`` where ``h_0 = SHA-256("probanon/1 chain " + survey id)`` and
``h_i = SHA-256(h_{i-1} || row digest_i)`` (32-byte values, hex in the report). Your row digest is
in the list iff your row was counted; a row deleted or inserted after an earlier report leaves
that report's list and head unreproducible from the rows.
"""

from __future__ import annotations

import base64
import hashlib

ROW_TAG = "probanon/1 row"
CHAIN_TAG = "probanon/1 chain "


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    """The bytes of unpadded base64url ``text``; ValueError if it is not that."""
    if not isinstance(text, str) or not text or len(text) % 4 == 1 or not all(
            c.isalnum() or c in "-_" for c in text) or not text.isascii():
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sha256_hex(data: bytes | str) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def canonical_row(survey_id: int, key_hash: str, cell: int, answers_sha256: str) -> bytes:
    """The canonical bytes of a stored row (module docstring): what a receipt signs."""
    return (f"{ROW_TAG}\nsurvey {int(survey_id)}\nkey {key_hash}\ncell {int(cell)}\n"
            f"answers {answers_sha256}\n").encode("utf-8")


def row_digest(survey_id: int, key_hash: str, cell: int, answers: str) -> str:
    """SHA-256 (hex) of the canonical form of a row whose canonical answers are ``answers``."""
    return sha256_hex(canonical_row(survey_id, key_hash, cell, sha256_hex(answers)))


# ---------------------------------------------------------------- keys and receipts

def new_key() -> tuple[bytes, str]:
    """(private key, raw 32 bytes; public key, base64url): a survey's receipt key, made at publication."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    raw = serialization.Encoding.Raw
    private = key.private_bytes(raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
    return private, b64url(key.public_key().public_bytes(raw, serialization.PublicFormat.Raw))


def private_key(conn, survey_id: int):
    """The survey's Ed25519 private key, or None (a survey published before receipts)."""
    import sqlalchemy as sa
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from . import db

    raw = conn.execute(sa.select(db.receipt_keys.c.private).where(db.receipt_keys.c.survey_id == survey_id)).scalar()
    return None if raw is None else Ed25519PrivateKey.from_private_bytes(bytes(raw))


def receipt(key, survey_id: int, key_hash: str, cell: int, answers: str) -> dict:
    """The receipt of a stored row (module docstring), signed with ``key``."""
    answers_sha = sha256_hex(answers)
    message = canonical_row(survey_id, key_hash, cell, answers_sha)
    return {"survey": int(survey_id), "cell": int(cell), "answers_sha256": answers_sha, "key_sha256": key_hash,
            "row_digest": sha256_hex(message), "signature": b64url(key.sign(message))}


class BadReceipt(ValueError):
    """A receipt that does not verify: the one-line reason."""


def verify(public_key: str, survey_id: int, idempotency_key: str, cell: int, answers: str, given) -> dict:
    """``given`` (a receipt from the collector) if it signs exactly this submission (survey, cell,
    canonical ``answers`` text, ``idempotency_key`` as sent) under the survey's ``public_key``
    (base64url), else :class:`BadReceipt`."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    if not isinstance(given, dict):
        raise BadReceipt("the collector sent no receipt")
    expected = {"survey": int(survey_id), "cell": int(cell), "answers_sha256": sha256_hex(answers),
                "key_sha256": sha256_hex(idempotency_key)}
    for name, value in expected.items():
        if given.get(name) != value:
            raise BadReceipt(f"the receipt's {name!r} is not that of the submission sent")
    message = canonical_row(survey_id, expected["key_sha256"], cell, expected["answers_sha256"])
    if given.get("row_digest") != sha256_hex(message):
        raise BadReceipt("the receipt's row digest is not that of the submission sent")
    try:
        public = Ed25519PublicKey.from_public_bytes(unb64url(public_key))
        public.verify(unb64url(given.get("signature")), message)
    except (ValueError, TypeError):
        raise BadReceipt("the receipt key or the signature is malformed") from None
    except InvalidSignature:
        raise BadReceipt("the receipt's signature does not verify with the survey's receipt key") from None
    return given


# ---------------------------------------------------------------- the chain

def chain_of(survey_id: int, digests) -> str:
    """The head (hex) of the chain over row digests (hex) in their order."""
    head = hashlib.sha256((CHAIN_TAG + str(int(survey_id))).encode("utf-8")).digest()
    for d in digests:
        head = hashlib.sha256(head + bytes.fromhex(d)).digest()
    return head.hex()


def chain(conn, survey_id: int) -> dict:
    """The survey's stored rows as the release report publishes them: {"order", "rows", "head",
    "row_digests"} in key-hash order."""
    import sqlalchemy as sa

    from . import db

    t = db.submissions.c
    rows = sorted(conn.execute(sa.select(t.key_hash, t.cell, t.answers).where(t.survey_id == survey_id)).all(),
                  key=lambda r: r.key_hash)  # in Python: no collation of the database's locale
    digests = [row_digest(survey_id, r.key_hash, r.cell, r.answers) for r in rows]
    return {"order": "key hash (SHA-256 of the idempotency key), ascending", "rows": len(digests),
            "head": chain_of(survey_id, digests), "row_digests": digests}


def counted(report: dict, receipt: dict, public_key: str | None = None) -> int:
    """Where the release ``report`` counts the row of ``receipt``: its position (0-based) in the
    report's chain, after checking that the chain's head is that of its row digests (and, given the
    survey's ``public_key``, that the receipt is the survey's signature of its row); ValueError
    saying what does not hold."""
    chain_ = report.get("chain") if isinstance(report, dict) else None
    if not isinstance(chain_, dict) or not isinstance(chain_.get("row_digests"), list):
        raise ValueError("the report has no hash chain (a collector before issue 40.10?)")
    digests, survey_id = chain_["row_digests"], report.get("survey")
    if not isinstance(receipt, dict) or receipt.get("survey") != survey_id:
        raise ValueError(f"the receipt is not one of survey {survey_id}'s")
    if chain_.get("rows") != len(digests) or chain_of(survey_id, digests) != chain_.get("head"):
        raise ValueError("the report's chain head is not that of its row digests: the report was altered")
    try:
        message = canonical_row(survey_id, receipt["key_sha256"], receipt["cell"], receipt["answers_sha256"])
    except (KeyError, TypeError, ValueError):
        raise ValueError("the receipt is malformed") from None
    if receipt.get("row_digest") != sha256_hex(message):
        raise ValueError("the receipt's row digest is not that of its fields")
    if public_key is not None:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

        try:
            Ed25519PublicKey.from_public_bytes(unb64url(public_key)).verify(unb64url(receipt.get("signature")), message)
        except (ValueError, TypeError, InvalidSignature):
            raise ValueError("the receipt's signature does not verify with the survey's receipt key") from None
    if receipt["row_digest"] not in digests:
        raise ValueError(f"the report does not count this row: its digest {receipt['row_digest']} is not among the "
                         f"{len(digests)} row digests")
    return digests.index(receipt["row_digest"])
