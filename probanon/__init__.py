"""probanon: releasing data with probabilistic anonymity guarantees."""

__version__ = "0.2.0"

from . import _cache  # noqa: E402  before any numba kernel is compiled or loaded

_cache.configure()

from .errors import InputError, ParameterError, ProbanonError, SpecificationError  # noqa: E402

__all__ = ["__version__", "ProbanonError", "InputError", "ParameterError", "SpecificationError"]
