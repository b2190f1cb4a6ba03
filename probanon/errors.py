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


class ProbanonWarning(UserWarning):
    """A soft finding: the work goes on, and whoever runs it should know (an audit risk accepted,
    a release made by another version, a questionnaire too long to print). The library issues it
    with ``warnings.warn(message, ProbanonWarning)`` where it finds it and prints nothing; the
    command line prints it on stderr (``probanon: warning: MESSAGE``). Filter it as any warning:
    ``warnings.simplefilter("ignore", ProbanonWarning)``."""


class ProbanonNote(ProbanonWarning):
    """A finding to know of that is no risk of the release (a survey document not checked against
    a letter); the command line prints ``probanon: note: MESSAGE``."""


class AdjustmentWarning(ProbanonWarning):
    """What a method changed to keep its guarantee, beyond its usual work: strata merged into their
    neighbours, missing-value patterns merged, key values suppressed. The command line prints it
    as the statement it is (``probanon: MESSAGE``)."""
