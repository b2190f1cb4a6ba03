"""The partition step of probabilistic k-anonymity by swapping (paper 2, Sec. IV).

Each method partitions the records into groups of at least ``k`` and says which columns
each partition moves. A method may use several partitions (one per confidential
attribute for informed intruders), so the labels are an (n, p) matrix: column ``t`` is
partition ``t``, which moves the columns ``columns[t]``.

* ``"mdav-id"`` (Sec. V, the k-anonymous baseline): one MDAV partition on every attribute;
  all of them are replaced by the group centroid.
* ``"mdav-swap"`` (Sec. IV-A, uninformed intruder): one MDAV partition on the
  quasi-identifiers (the non-confidential attributes); the quasi-identifier tuples are
  permuted inside each group.
* ``"mdav-swap-informed"`` (Sec. IV-B, Table V; the variant of the paper's experiments):
  for each confidential attribute ``c``, MDAV on the ORIGINAL data of every attribute
  except ``c`` (what intruder ``I_c`` knows); column ``c`` is permuted inside each group.
* ``"ir-swap"`` (Sec. IV-C): for each confidential ``c``, individual ranking on ``c``
  alone: a stable sort by decreasing ``c``, consecutive blocks of ``k``, the remainder
  (``n mod k`` records) merged into the last block (the smallest values).

MDAV uses Euclidean distance on z-scored attributes (population sd) by default.
``standardize=False`` uses the raw values instead; that is how the paper's experiments were
run: it reproduces Table VII (MDAV-ID, census, k = 12) to the printed digits, which the
z-scored partition does not (see tests/test_swapping.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_k, check_matrix
from ..data import Standardizer
from ..errors import ParameterError
from ..microagg.mdav import _mdav_partition
from ..microagg.ranking import _ranking_partition

METHODS = ("mdav-id", "mdav-swap", "mdav-swap-informed", "ir-swap")


@dataclass(frozen=True)
class Grouping:
    """Partitions of one swapping method.

    ``labels`` (n, p) int64: group of record ``i`` in partition ``t`` (groups numbered from
    0 in each partition); ``columns`` p tuples of column positions: partition ``t`` moves
    the columns ``columns[t]`` (permuted jointly, or replaced by group means for MDAV-ID);
    ``method`` and ``k`` as given.
    """

    labels: np.ndarray
    columns: tuple
    method: str
    k: int

    @property
    def n_partitions(self) -> int:
        return int(self.labels.shape[1])

    def sizes(self, t: int = 0) -> np.ndarray:
        """Group sizes of partition ``t``."""
        return np.bincount(self.labels[:, t])


def check_confidential(confidential, d: int, names=None) -> tuple:
    """Positions of the confidential attributes: names (when ``names`` is given) or
    positions 0..d-1, non-empty, without repetition."""
    if confidential is None or isinstance(confidential, (str, int, np.integer)):
        confidential = [] if confidential is None else [confidential]
    confidential = list(confidential)
    if not confidential:
        raise ParameterError("no confidential attribute given")
    positions = []
    for c in confidential:
        if names is not None and c in names:
            positions.append(names.index(c))
        elif names is None and isinstance(c, (int, np.integer)) and not isinstance(c, bool) and 0 <= c < d:
            positions.append(int(c))
        else:
            where = "a column of the table" if names is not None else f"a position in a table of {d} columns"
            raise ParameterError(f"confidential attribute {c!r} is not {where}")
    if len(set(positions)) != len(positions):
        raise ParameterError("a confidential attribute is named twice")
    return tuple(positions)


def _mdav_labels(Z: np.ndarray, k: int) -> np.ndarray:
    return _mdav_partition(np.ascontiguousarray(Z), k).labels


def _metric_space(X: np.ndarray, standardize: bool) -> np.ndarray:
    return Standardizer.fit_valid(X).transform(X) if standardize else X


def check_method(method: str, confidential, d: int):
    """The confidential positions ``method`` works on (None for MDAV-ID, which aggregates every
    attribute), after the method's own requirements on them; ``confidential``: positions in a
    table of ``d`` columns (or None)."""
    if method not in METHODS:
        raise ParameterError(f"unknown swapping method {method!r} (use one of {', '.join(METHODS)})")
    if method == "mdav-id":
        return None
    conf = check_confidential(confidential, d)
    if method == "mdav-swap" and len(conf) == d:
        raise ParameterError("mdav-swap needs a quasi-identifier: every attribute is confidential")
    if method == "mdav-swap-informed" and d < 2:
        raise ParameterError("mdav-swap-informed needs at least one attribute besides the confidential one")
    return conf


def partition_groups(X: np.ndarray, k: int, method: str, conf, standardize: bool = True) -> Grouping:
    """The partitions of ``method`` (module docstring) of valid arguments: ``X`` finite float64,
    1 <= k <= n, ``conf`` from :func:`check_method`. The public functions below check their
    arguments, then call it."""
    if method == "mdav-id":
        labels = _mdav_labels(_metric_space(X, standardize), k)
        return Grouping(labels[:, None], (tuple(range(X.shape[1])),), "mdav-id", k)
    if method == "mdav-swap":
        qi = tuple(j for j in range(X.shape[1]) if j not in conf)
        labels = _mdav_labels(_metric_space(X, standardize)[:, qi], k)
        return Grouping(labels[:, None], (qi,), "mdav-swap", k)
    if method == "mdav-swap-informed":
        Z = _metric_space(X, standardize)
        labels = np.column_stack([_mdav_labels(np.delete(Z, c, axis=1), k) for c in conf])
        return Grouping(labels, tuple((c,) for c in conf), "mdav-swap-informed", k)
    labels = _ranking_partition(-X[:, list(conf)], k, False)
    return Grouping(labels, tuple((c,) for c in conf), "ir-swap", k)


def _checked(X, k, method: str, confidential, standardize: bool) -> Grouping:
    X = check_matrix(X, name="data")
    k = check_k(k, X.shape[0])
    return partition_groups(X, k, method, check_method(method, confidential, X.shape[1]), standardize)


def mdav_groups(X, k, standardize: bool = True) -> Grouping:
    """MDAV-ID partition: classical MDAV on every attribute (paper 2, Sec. V, first method)."""
    return _checked(X, k, "mdav-id", None, standardize)


def quasi_identifier_groups(X, k, confidential, standardize: bool = True) -> Grouping:
    """MDAV-SWAP for the uninformed intruder (Sec. IV-A): one MDAV partition on the
    quasi-identifiers QI = all attributes but the confidential ones; QI tuples move jointly,
    so P(X'(qi_i^E) = qi | T', E, M) = 1/|G| inside the record's group G."""
    return _checked(X, k, "mdav-swap", confidential, standardize)


def informed_groups(X, k, confidential, standardize: bool = True) -> Grouping:
    """MDAV-SWAP for informed intruders (Sec. IV-B, Table V): for each confidential ``c``,
    MDAV on the original data of all attributes except ``c``; only ``c`` moves (the inverse
    permutation of the one the quasi-identifiers of intruder I_c would get)."""
    return _checked(X, k, "mdav-swap-informed", confidential, standardize)


def ranking_groups(X, k, confidential) -> Grouping:
    """IR-SWAP (Sec. IV-C): for each confidential ``c``, individual ranking on ``c``: stable
    sort by decreasing ``c``, blocks of ``k`` consecutive records, the last block takes the
    remainder (k .. 2k-1 records, the smallest values); only ``c`` moves.

    The paper does not give the direction. Decreasing order puts the wide block where the
    values are dense; on the census it reproduces Table X (k = 100: .025 against the paper's
    .020), while increasing order merges the remainder into the long upper tail and gives
    .037 (+85%)."""
    return _checked(X, k, "ir-swap", confidential, True)


def swap_groups(X, k, method: str, confidential=None, standardize: bool = True) -> Grouping:
    """The partitions of ``method`` (one of :data:`METHODS`); ``confidential`` is ignored by
    MDAV-ID (all attributes are aggregated) and ``standardize`` by IR-SWAP."""
    if method not in METHODS:
        raise ParameterError(f"unknown swapping method {method!r} (use one of {', '.join(METHODS)})")
    return _checked(X, k, method, confidential, standardize)
