"""One exception hierarchy for probanon.

Every error raised on bad input derives from :class:`ProbanonError`, so callers
(and the CLI) can catch a single type and print a one-line message.
"""


class ProbanonError(ValueError):
    """Base class of every error probanon raises on purpose (a ``ValueError``, as in
    scikit-learn: bad input is a bad value)."""


class InputError(ProbanonError):
    """The input data cannot be used (empty, NaN/inf, text in numeric columns...)."""


class NotNumbersError(InputError, TypeError):
    """The input holds objects that are not numbers at all (a dict, a list...): also a
    ``TypeError``, as scikit-learn's estimator checks expect."""


class ParameterError(ProbanonError):
    """A parameter is out of range (k < 1, k > n, unknown method...)."""


class SpecificationError(ProbanonError):
    """A published specification (JSON) is malformed, inconsistent or tampered with."""


class NotFittedError(ProbanonError, AttributeError):
    """An estimator was used before ``fit``."""


class GuaranteeError(ProbanonError):
    """What is about to be released does not have the property its mechanism promises (a
    release below the k it states): nothing is written."""
