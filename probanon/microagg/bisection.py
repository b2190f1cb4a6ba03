"""Principal-direction bisection: a deterministic partition into cells of given sizes, used
as a second starting point of PCL (:mod:`.pcl`).

A set S of records that must form the cells of sizes (n_1, ..., n_g) is split in two along
its principal direction v (the eigenvector of the largest eigenvalue of the scatter matrix
sum_{x in S} (x - mean_S)(x - mean_S)^T): the records sorted by x . v, the first
n_1 + ... + n_h of them (h = floor(g / 2)) form cells 1..h and the rest cells h+1..g; each
half is split again until one cell remains. Every cell gets exactly its size, and the cells
are convex slabs of slabs, roughly balanced in shape, unlike MDAV's groups, which are grown
from the border of the data inwards. (The principal-direction divisive partitioning of
Boley 1998 and the PCA-Part initialisation of k-means, Su & Dy 2007, with medians replaced
by the size quantiles.)
"""

from __future__ import annotations

import numpy as np


def principal_bisection(Z, sizes) -> np.ndarray:
    """Labels 0..g-1 of the rows of Z (n, d) such that cell q holds exactly ``sizes[q]``
    records (sum(sizes) = n), by recursive bisection along principal directions (module
    docstring). Ties in the projection keep row order. O(n d^2 log g)."""
    Z = np.asarray(Z, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.sum() != Z.shape[0] or (sizes < 1).any():
        raise ValueError("sizes must be positive and sum to the number of rows")
    labels = np.empty(Z.shape[0], dtype=np.int64)
    stack = [(np.arange(Z.shape[0]), 0, sizes.size)]
    while stack:
        rows, first, last = stack.pop()
        if last - first == 1:
            labels[rows] = first
            continue
        half = (first + last) // 2
        X = Z[rows] - Z[rows].mean(axis=0)
        direction = np.linalg.eigh(X.T @ X)[1][:, -1]
        order = rows[np.argsort(X @ direction, kind="stable")]
        cut = int(sizes[first:half].sum())
        stack.append((order[:cut], first, half))
        stack.append((order[cut:], half, last))
    return labels
