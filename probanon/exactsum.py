"""Exactly rounded sums that can be accumulated in pieces (issue 19.2).

A float64 x = (-1)^s * M * 2^(e - 1075) with M < 2^53 an integer (e the biased exponent; e = 0
for subnormals, read as e = 1). A numba kernel sums, per column and per exponent e, the high and
low 26 bits of the signed M in int64 (exact for up to 2^36 values per call), and the column's
exact sum is kept as one Python integer, a multiple of 2^-1074 (:class:`ExactSum`, a few hundred
bytes per column). Integers add exactly, so the sums of a column's pieces, added in any order on
any number of machines, give the same total, and :meth:`ExactSum.values` rounds it once (to
nearest, like ``math.fsum``; NaN and infinity are refused). Same data, same bits, however the rows were split: the property
:class:`probanon.data.Standardizer` and the cut tree of blocked microaggregation
(:mod:`probanon.microagg.blocks`) rely on, so a fit on a Dask cluster reproduces the fit in one
process exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .errors import InputError

#: float64 biased exponents (0..2047; 2047 is inf/NaN, never summed)
EXPONENTS = 2048
LOW = 26


@numba.njit(cache=True, nogil=True, inline="always")
def _add(b, j, hi, lo):
    """Add the float64 whose int64 view is b to column j."""
    e = (b >> 52) & 0x7FF
    m = b & ((np.int64(1) << 52) - 1)
    if e > 0:
        m |= np.int64(1) << 52
    if b < 0:
        hi[j, e] -= m >> LOW
        lo[j, e] -= m & ((np.int64(1) << LOW) - 1)
    else:
        hi[j, e] += m >> LOW
        lo[j, e] += m & ((np.int64(1) << LOW) - 1)


@numba.njit(cache=True, nogil=True)
def _accumulate(bits, hi, lo):
    """Add every row of ``bits`` (n x c, the int64 views of finite float64s) to the column sums."""
    for i in range(bits.shape[0]):
        for j in range(bits.shape[1]):
            _add(bits[i, j], j, hi, lo)


@numba.njit(cache=True, nogil=True)
def _accumulate_products(Z, rows, hi, lo):
    """Add z_a * z_b (a <= b, row-major pairs) of the rows ``rows`` of Z to the column sums."""
    d = Z.shape[1]
    products = np.empty(d * (d + 1) // 2)
    bits = products.view(np.int64)
    for r in range(rows.shape[0]):
        i = rows[r]
        c = 0
        for a in range(d):
            for b in range(a, d):
                products[c] = Z[i, a] * Z[i, b]
                c += 1
        for c in range(products.shape[0]):
            _add(bits[c], c, hi, lo)


def _integers(hi, lo) -> list[int]:
    """Per column, the exact sum as an integer multiple of 2^-1074 (the smallest subnormal)."""
    out = []
    for j in range(hi.shape[0]):
        used = np.flatnonzero(hi[j] | lo[j])
        out.append(sum(((int(hi[j, e]) << LOW) + int(lo[j, e])) << (max(int(e), 1) - 1) for e in used))
    return out


def _finite(values) -> None:
    if not np.isfinite(values).all():
        raise InputError("exact sums of values that are not all finite (NaN or infinity)")


@dataclass(frozen=True)
class ExactSum:
    """The exact sums of some columns, as integer multiples of 2^-1074 (module docstring): what
    a piece of the data sends (a few hundred bytes per column), added with ``+``."""

    totals: tuple

    @classmethod
    def zeros(cls, columns: int) -> "ExactSum":
        return cls((0,) * columns)

    @classmethod
    def of(cls, values) -> "ExactSum":
        """The column sums of ``values`` (n x c, or n values: one column), all finite."""
        values = np.asarray(values, dtype=np.float64)
        values = values.reshape(-1, 1) if values.ndim == 1 else values
        _finite(values)
        hi, lo = np.zeros((2, values.shape[1], EXPONENTS), np.int64)
        _accumulate(np.ascontiguousarray(values).view(np.int64), hi, lo)
        return cls(tuple(_integers(hi, lo)))

    @classmethod
    def of_products(cls, Z, rows) -> "ExactSum":
        """The sums over the rows ``rows`` of Z of z_a z_b for a <= b (d (d + 1) / 2 columns,
        row-major), each product rounded once as ``Z[:, a] * Z[:, b]`` rounds it."""
        _finite(Z)
        d = Z.shape[1]
        hi, lo = np.zeros((2, d * (d + 1) // 2, EXPONENTS), np.int64)
        _accumulate_products(np.ascontiguousarray(Z, dtype=np.float64), np.ascontiguousarray(rows, dtype=np.int64),
                             hi, lo)
        return cls(tuple(_integers(hi, lo)))

    def __add__(self, other: "ExactSum") -> "ExactSum":
        return ExactSum(tuple(a + b for a, b in zip(self.totals, other.totals, strict=True)))

    def values(self) -> np.ndarray:
        """The exact column sums, each rounded once to the nearest float64 (int / int is
        correctly rounded in Python)."""
        return np.array([t / (1 << 1074) for t in self.totals], dtype=np.float64)


def exact_sums(values) -> np.ndarray:
    """Column sums of ``values`` rounded once (the exact sum's nearest float64, as ``math.fsum``)."""
    return ExactSum.of(values).values()


__all__ = ["ExactSum", "exact_sums"]
