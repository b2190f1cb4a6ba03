"""probanon: releasing data with probabilistic anonymity guarantees."""

__version__ = "0.1.0"

from .errors import InputError, ParameterError, ProbanonError, SpecificationError  # noqa: E402

__all__ = ["__version__", "ProbanonError", "InputError", "ParameterError", "SpecificationError"]
