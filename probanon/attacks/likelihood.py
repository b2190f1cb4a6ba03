"""Learned likelihood matching: the intruder who learns from the release how the confidential values
relate to the keys, then links optimally one-to-one.

Knows: the targets' original keys, the release and the mechanism (so the groups it can rebuild,
:func:`probanon.attacks.setting.rebuild_groups`). Categorical keys enter in the release's
embedding (:class:`probanon.attacks.setting.AttackData`: ordinal ranks, nominal indicators), a
text confidential column as its category indicators; a missing value is replaced by the mean of
the column's observed released values beside a 0/1 column saying it is missing (:func:`filled`).
Does:

1. On the release alone, on a transform ``t`` (signed ``log1p`` or identity; ``"auto"`` keeps the
   one whose two fits have the larger mean R^2 on the release), fits by least squares both ways

   .. math::

       t(c) = A\\,[1, t(x)] + e_c, \\qquad t(x) = B\\,[1, t(c)] + e_x,

   with Gaussian residuals of covariances :math:`\\Sigma_c, \\Sigma_x` (their sample covariances
   on the release, plus a ridge of 1e-9 times their mean variance).
2. Scores target ``i`` (keys :math:`x_i`) against released row ``j`` (confidential :math:`c_j`) by
   the negative log-likelihood of both models,

   .. math::

       \\mathrm{cost}(i, j) = \\lVert \\Sigma_c^{-1/2}(t(c_j) - A[1, t(x_i)]) \\rVert^2
                            + \\lVert \\Sigma_x^{-1/2}(t(x_i) - B[1, t(c_j)]) \\rVert^2
                            = \\lVert u_i - v_j \\rVert^2,

   a squared Euclidean distance between an embedding ``u`` of the targets and ``v`` of the rows.
3. Links one-to-one by minimum total cost (Hungarian algorithm,
   :func:`scipy.optimize.linear_sum_assignment`) inside every group it rebuilt; ties are broken
   at random (the rows of a group are shuffled in each run). Without groups: one global
   assignment (dense up to ``DENSE_MAX`` records; beyond, a minimum-weight full matching on the
   ``NEIGHBOURS`` nearest rows of each target, :func:`scipy.sparse.csgraph.min_weight_full_bipartite_matching`,
   or the nearest row when that graph has no full matching).

On MDAV-SWAP the released key tuples are permuted inside groups, so the fits see the groups'
keys instead of the persons', yet they order the members of a group well: the issue's census
figures were 0.72 / 0.56 / 0.40 of the people at k = 3 / 5 / 10.
"""

from __future__ import annotations


import numpy as np
from scipy import linalg, optimize, sparse, spatial
from scipy.sparse import csgraph

from ..errors import ParameterError
from .setting import AttackData

NAME = "learned likelihood"
KNOWS = ("the target's original keys and the mechanism; fits confidential-given-keys and keys-given-confidential "
         "(linear, on the release) and links one-to-one by the likelihood inside the groups it rebuilds")
TRANSFORMS = ("auto", "log1p", "identity")
DENSE_MAX = 3000
NEIGHBOURS = 16
RIDGE = 1e-9


def signed_log1p(V: np.ndarray) -> np.ndarray:
    """sign(v) log(1 + |v|): a log scale for skewed amounts that keeps zeros and signs."""
    return np.sign(V) * np.log1p(np.abs(V))


def _transform(V: np.ndarray, kind: str) -> np.ndarray:
    return signed_log1p(V) if kind == "log1p" else V


class LinearModel:
    """Least squares of ``B`` on ``[1, A]`` with a whitening of its residuals."""

    def __init__(self, A: np.ndarray, B: np.ndarray):
        design = np.column_stack([np.ones(A.shape[0]), A])
        self.coef, *_ = np.linalg.lstsq(design, B, rcond=None)
        residual = B - design @ self.coef
        spread = ((B - B.mean(axis=0)) ** 2).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            r2 = 1.0 - (residual ** 2).sum(axis=0) / spread
        self.r2 = float(np.mean(np.where(spread > 0, r2, 0.0)))
        cov = np.atleast_2d(np.cov(residual, rowvar=False, bias=True))
        scale = max(float(np.trace(cov)) / cov.shape[0], float(B.var(axis=0).mean()), 1e-300)
        cov = cov + RIDGE * scale * np.eye(cov.shape[0])
        self.whiten = linalg.solve_triangular(linalg.cholesky(cov, lower=True), np.eye(cov.shape[0]), lower=True)

    def predict(self, A: np.ndarray) -> np.ndarray:
        return self.coef[0] + A @ self.coef[1:]


def filled(V: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """``V`` with its missing values (NaN) replaced by the mean of the observed values of
    ``reference`` (0 when none), and one more 0/1 column per column missing somewhere in either
    (1 where ``V`` lacks it): a linear fit then learns what a missing value says."""
    lacking = np.isnan(V)
    cols = np.flatnonzero(lacking.any(axis=0) | np.isnan(reference).any(axis=0))
    if cols.size == 0:
        return V
    observed = ~np.isnan(reference[:, cols])
    mean = np.where(observed.any(axis=0), np.nansum(reference[:, cols], axis=0) / np.maximum(observed.sum(axis=0), 1),
                    0.0)
    out = V.copy()
    out[:, cols] = np.where(lacking[:, cols], mean, V[:, cols])
    return np.hstack([out, lacking[:, cols].astype(np.float64)])


def embeddings(data: AttackData, transform: str = "auto") -> tuple[np.ndarray, np.ndarray, str, float]:
    """``(u, v, transform, r2)``: ``cost(i, j) = ||u_i - v_j||^2`` (module docstring)."""
    if transform not in TRANSFORMS:
        raise ParameterError(f"transform must be one of {', '.join(TRANSFORMS)}, got {transform!r}")
    best = None
    for kind in (("log1p", "identity") if transform == "auto" else (transform,)):
        X, K, C = (_transform(V, kind) for V in (data.known, data.released_known, data.released_confidential))
        X, K, C = filled(X, K), filled(K, K), filled(C, C)
        c_given_x, x_given_c = LinearModel(K, C), LinearModel(C, K)
        r2 = (c_given_x.r2 + x_given_c.r2) / 2
        if best is None or r2 > best[-1]:
            u = np.hstack([c_given_x.predict(X) @ c_given_x.whiten.T, X @ x_given_c.whiten.T])
            v = np.hstack([C @ c_given_x.whiten.T, x_given_c.predict(C) @ x_given_c.whiten.T])
            best = (u, v, kind, r2)
    return best


def _assign(cost: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Column chosen for every row of ``cost`` by a minimum-cost one-to-one assignment (columns
    shuffled first, so that ties fall at random); rows left over (more rows than columns) take
    their cheapest column."""
    perm = rng.permutation(cost.shape[1])
    shuffled = cost[:, perm]
    rows, cols = optimize.linear_sum_assignment(shuffled)
    if rows.size == cost.shape[0]:  # every row assigned
        return perm[cols]
    out = perm[np.argmin(shuffled, axis=1)]
    out[rows] = perm[cols]
    return out


class LearnedLikelihood:
    name, knows = NAME, KNOWS

    def __init__(self, data: AttackData, transform: str = "auto"):
        if data.released_confidential.shape[1] == 0:
            raise ParameterError("the learned intruder needs confidential columns")
        u, v, self.transform, self.r2 = embeddings(data, transform)
        self.n = data.n
        self.blocks = [(t, r, spatial.distance.cdist(u[t], v[r], "sqeuclidean")) for t, r in data.group_blocks()]
        self.u, self.v = (u, v) if data.target_group is None else (None, None)
        self._found = None
        self.note = f"transform {self.transform}, mean R^2 of the two fits on the release {self.r2:.3f}"

    def links(self, rng: np.random.Generator) -> np.ndarray:
        out = np.full(self.n, -1, dtype=np.int64)
        if self.u is None:
            for targets, rows, cost in self.blocks:  # ~0.1 s per run for 20,000 groups of 5
                out[targets] = rows[_assign(cost, rng)]
            return out
        if self.n <= DENSE_MAX:
            return _assign(spatial.distance.cdist(self.u, self.v, "sqeuclidean"), rng)
        return self._sparse(rng)

    def _neighbours(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ``NEIGHBOURS`` nearest rows of every target, found once: ``(dist, idx, tied)``,
        ``tied`` the targets whose neighbours and their order are not unique (a distance repeats
        among their ``NEIGHBOURS + 1`` nearest), for which only a search in the run's row order
        gives what that search returns."""
        if self._found is None:
            k = min(NEIGHBOURS, self.n)
            dist, idx = spatial.cKDTree(self.v).query(self.u, k=min(k + 1, self.n), workers=-1)
            tied = np.flatnonzero((np.diff(dist, axis=1) == 0).any(axis=1))
            self._found = dist[:, :k], idx[:, :k], tied
        return self._found

    def _sparse(self, rng: np.random.Generator) -> np.ndarray:
        perm = rng.permutation(self.n)
        # the nearest rows of v[perm]: those of v, renumbered (search once), except for tied targets
        found, idx, tied = self._neighbours()
        position = np.empty(self.n, dtype=np.int64)
        position[perm] = np.arange(self.n)
        dist, idx = found.copy(), position[idx]
        if tied.size:
            dist[tied], idx[tied] = spatial.cKDTree(self.v[perm]).query(self.u[tied], k=idx.shape[1], workers=-1)
        nearest = perm[idx[:, 0]]
        weights = dist ** 2 + 1e-12  # explicit zeros would be dropped from the sparse graph
        graph = sparse.csr_matrix((weights.ravel(), idx.ravel(), np.arange(0, idx.size + 1, idx.shape[1])),
                                  shape=(self.n, self.n))
        try:
            rows, cols = csgraph.min_weight_full_bipartite_matching(graph)
        except ValueError:  # the neighbour graph has no perfect matching
            return nearest
        out = nearest.copy()
        out[rows] = perm[cols]
        return out
