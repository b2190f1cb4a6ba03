"""MDAV, the classical fixed-size multivariate microaggregation (Domingo-Ferrer & Torra 2005;
"maximum distance to average vector"), as used in all five papers.

Algorithm (n remaining records, Euclidean distance on standardised data):

    while n >= 3k:
        c = centroid of the remaining records
        r = the record farthest from c
        s = the record farthest from r (outside r's group)
        form a group of r and its k-1 nearest remaining records, remove it
        form a group of s and its k-1 nearest remaining records, remove it
    if n >= 2k:
        c, r as above; group r with its k-1 nearest; the rest (k..2k-1) is the last group
    else:
        the rest (k..2k-1) is the last group

Every group has exactly k records except the last (k..2k-1).

Tie rules (deterministic, and the same in the fast kernel and the NumPy reference, which
return identical partitions bit for bit): the farthest record is the first in row order
among equal distances; "nearest" orders records by the key (squared distance, coordinates
lexicographically, row). Squared distances are summed column by column in float64; the
centroid is a running sum from which each group's rows are subtracted.

``keep_duplicates=True`` (the estimator's default, issue 39.1) departs from the classical
algorithm in one point: a group that reaches a tuple with more exact copies takes all the
copies (it may then exceed k), and a group that would leave fewer than k records takes them
all. Then no two identical records end in different groups and the published function
reproduces the labels exactly; on data without identical key tuples the partition is the
classical one. Classical MDAV (``keep_duplicates=False``, as sdcMicro's ``mdav``) gives the
published information-loss values; where it splits identical records no function of the keys
can reproduce its groups, and the fit publishes none (``function_`` is None).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .._threads import governor
from .._validation import BOOLEAN, check_k, check_matrix
from ..errors import ParameterError
from ._mdav_kernel import mdav_numba
from ._mdav_reference import mdav_numpy
from .base import CONSTRAINTS, Microaggregator


FLOAT32_FILTER_MAX = 1e15


@dataclass(frozen=True)
class MDAVPartition:
    """Result of :func:`mdav_partition`, one entry per group in formation order.

    ``labels`` (n,) group of each row; ``references`` row of each group's reference record
    (r or s), -1 for the last group; ``radius2`` squared distance from the reference to the
    k-th member (inf for the last group); ``boundary`` row of that k-th member (-1 last).
    """

    labels: np.ndarray
    references: np.ndarray
    radius2: np.ndarray
    boundary: np.ndarray

    @property
    def n_groups(self) -> int:
        return int(self.references.size)


def mdav_partition(Z, k: int, keep_duplicates: bool = False, engine: str = "numba") -> MDAVPartition:
    """Classical MDAV partition of the rows of ``Z`` (already standardised).

    ``engine="numba"`` is the fast kernel (float32 candidate passes, exact float64
    decisions, O(n d) memory, parallel); ``"numpy"`` is the plain reference. Both give the
    same partition. Values beyond 1e15 in absolute value (possible only without
    standardisation) go to the reference: the kernel's float32 filter would overflow.
    """
    if engine not in ("numba", "numpy"):
        raise ParameterError(f"unknown engine {engine!r} (use 'numba' or 'numpy')")
    Z = np.ascontiguousarray(check_matrix(Z, name="data"))
    return _mdav_partition(Z, check_k(k, Z.shape[0]), keep_duplicates, engine)


def _mdav_partition(Z: np.ndarray, k: int, keep_duplicates: bool = False, engine: str = "numba") -> MDAVPartition:
    """:func:`mdav_partition` of valid arguments: ``Z`` finite, C-contiguous float64, 1 <= k <= n
    (the estimators and PCL checked them at their edge)."""
    if engine == "numba" and np.abs(Z).max() > FLOAT32_FILTER_MAX:
        engine = "numpy"  # the float32 filter of the kernel needs |z| <= 1e15: use the exact path
    if engine == "numba":
        threads = numba.get_num_threads()
        out = mdav_numba(Z, k, bool(keep_duplicates), max(2, threads), governor(threads=threads))
    else:
        out = mdav_numpy(Z, k, bool(keep_duplicates))
    return MDAVPartition(*out)


class MDAV(Microaggregator):
    """MDAV microaggregation estimator.

    Parameters: ``k`` minimum group size; ``keep_duplicates`` (default True) never split
    identical tuples (see module docstring; False: classical MDAV, which publishes no function
    when it splits identical records). Fitted: ``labels_``, ``centroids_`` (original units), ``sizes_``,
    ``partition_`` (:class:`MDAVPartition`, unblocked fits), ``function_`` (kind "ordered-balls": reference
    points with radii, first ball that contains the record, last group by default).

    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(100, 3))
    >>> m = MDAV(k=5).fit(X)
    >>> bool((m.function_.assign(X) == m.labels_).all())
    True
    """

    _parameter_constraints = {**CONSTRAINTS, "keep_duplicates": [BOOLEAN]}
    _blockable = True
    _split_option = "keep_duplicates=False"

    def __init__(self, k: int = 3, *, keep_duplicates: bool = True, block_size=None, n_jobs=None, nominal=(),
                 ordinal=(), missing="raise", merge_small_strata=False):
        self.k = k
        self.keep_duplicates = keep_duplicates
        self.block_size = block_size  # blocks for large files: see Microaggregator
        self.n_jobs = n_jobs
        self.nominal = nominal  # options of every microaggregator: see Microaggregator
        self.ordinal = ordinal
        self.missing = missing
        self.merge_small_strata = merge_small_strata

    def _keeps_identical(self) -> bool:
        return bool(self.keep_duplicates)

    def _partition(self, Z, X, progress):
        progress("MDAV", 0, 1)  # one numba kernel: no finer steps
        part = _mdav_partition(Z, self.k_, self.keep_duplicates)
        progress("MDAV", 1, 1)
        self.partition_ = part
        balls = part.references[:-1]
        d = Z.shape[1]
        rule = {
            "references": np.ascontiguousarray(Z[balls].reshape(-1, d)),
            "radius2": np.ascontiguousarray(part.radius2[:-1]),
            "boundary": np.ascontiguousarray(Z[part.boundary[:-1]].reshape(-1, d)),
        }
        return part.labels, "ordered-balls", rule
