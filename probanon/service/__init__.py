"""The survey system of paper 1 (Sec. III, locally trusted anonymisation): a collector service.

The office publishes a p-probabilistic k-anonymous microaggregation function (a verified survey
specification, :mod:`probanon.survey.spec`); each respondent checks it and applies it on their own
device (the respondent page ``/respond/ID`` or ``probanon survey respond``); the collector receives
only the cell and the confidential answers, and releases them as cell centroids + answers.

Endpoints (JSON; errors are JSON ``{"detail": "<one line>"}``, 4xx for a refused request, 500 for a
fault; tokens as ``Authorization: Bearer <token>``; ID is 1..2^31 - 1; a ``Host`` header outside the
allowed hosts is 400):

=======  =====================================  =========  ==============================================
method   path                                   role       what
=======  =====================================  =========  ==============================================
GET      /api/surveys                           anybody    the open surveys
GET      /api/surveys/ID                        anybody    title, digest, window, questions, answer schema
GET      /api/surveys/ID/document               anybody    the survey document (SHA-256 = the digest)
GET      /api/surveys/ID/spec                   anybody    the specification, byte for byte as published
GET      /api/surveys/ID/spec/canonical         anybody    its canonical bytes (SHA-256 = the document's
                                                           specification digest)
POST     /api/surveys/ID/issuance               respondent {code, blinded_msg}: a blind signature (RFC 9474)
POST     /api/surveys/ID/submissions            respondent {digest, cell, answers, idempotency_key[, token]};
                                                           201 {status, receipt} (:mod:`.receipts`)
GET      /respond/ID                            anybody    the respondent page
POST     /api/admin/surveys                     admin      publish {title, spec, answers, opens, closes, ...}
POST     /api/admin/surveys/ID/tokens           admin      {count}: single-use invitation codes
POST     /api/admin/surveys/ID/close            admin      close now
POST     /api/admin/analysts                    admin      {note, survey}: an analyst token (of one survey)
GET      /api/admin/audit                       admin      the append-only audit log
GET      /api/surveys/ID/release?format=F       analyst    csv | parquet | json, random order
GET      /api/surveys/ID/release/report         analyst    participation per cell, achieved k, guarantee
=======  =====================================  =========  ==============================================

Needs the ``service`` extra (FastAPI, uvicorn with httptools, SQLAlchemy, psycopg); the respondent client
(:mod:`probanon.service.client`) needs only the standard library, and ``cryptography`` to verify the
receipt (Ed25519). At a survey's close the storage is rewritten without the order of arrival
(:mod:`.closing`).
"""


def missing_extra() -> str | None:
    """The first package of the ``service`` extra that is not installed, or None."""
    import importlib.util

    return next((name for name in ("fastapi", "sqlalchemy", "uvicorn", "httptools")
                 if importlib.util.find_spec(name) is None), None)
