"""Noise addition to continuous keys, with the noise level published (issue 43.6), as sdcMicro's
``addNoise`` (R/addNoise.r, ``addNoiseWORK``).

Every method releases, column by column, ``x'_j = a_j x_j + e_j`` with noise ``e_j`` of mean
``m_j`` and standard deviation ``sigma_j`` drawn independently of ``x``; ``a_j``, ``m_j`` and
``sigma_j`` are published (:meth:`NoiseResult.parameters`), so an analyst can correct the
released moments: ``var(x_j) = (var(x'_j) - sigma_j^2) / a_j^2``,
``mean(x_j) = (mean(x'_j) - m_j) / a_j``. ``s_j`` below is the column's sample standard deviation
(divisor n - 1, missing values left out, as R's ``sd(x, na.rm = TRUE)``), ``S`` the sample covariance
matrix of the records without a missing value (R's ``cov(na.omit(x))``); ``noise`` is a percentage.

``additive``     ``e_j ~ N(0, (noise/100 * s_j)^2)``, independent across columns (sdcMicro's
                 ``addNoise_additive``): a = 1, m = 0, sigma_j = noise/100 * s_j. Correlations
                 shrink by 1 / sqrt((1 + (noise/100)^2)) per column.
``correlated``   ``e ~ N_d(0, (noise/100) S)``, noise whose covariance is proportional to the data's
                 (sdcMicro's ``addNoise_correlated``; Kim 1986, "A method for limiting disclosure in
                 microdata based on random noise and transformation", ASA Proc. Survey Research
                 Methods; Brand 2002, "Microdata protection through noise addition", LNCS 2316):
                 ``cov(x') = (1 + noise/100) S`` in expectation, so every correlation is kept;
                 a = 1, m = 0, sigma_j = sqrt(noise/100 * S_jj). Note that ``noise`` scales the
                 variance here (as in sdcMicro), the standard deviation in ``additive``.
``correlated2``  ``x'_j = sqrt(1 - delta^2) x_j + delta z_j``, ``z_j ~ N((1 - sqrt(1 - delta^2)) / delta
                 * mean_j, s_j^2)`` (sdcMicro's ``addNoise_correlated2``): means and variances kept in
                 expectation; a = sqrt(1 - delta^2), m_j = (1 - a) mean_j, sigma_j = delta s_j;
                 covariances between columns scaled by a^2 = 1 - delta^2.

Missing values stay missing (no noise is drawn into them that a reader could see).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from .._validation import check_matrix, check_random_state
from ..errors import GuaranteeError, InputError, ParameterError

METHODS = ("additive", "correlated", "correlated2")


@dataclass(frozen=True)
class NoiseResult:
    """A noise release. ``released`` the perturbed columns (DataFrame, the input's columns and
    index); ``scale``, ``noise_mean``, ``noise_sd`` (one value per column) the published law of
    ``x'_j = scale_j x_j + e_j`` (``e_j`` of that mean and standard deviation); ``realised_sd`` the
    sample standard deviation of the noise actually drawn (``x'_j - scale_j x_j``)."""

    released: pd.DataFrame
    method: str
    noise: float | None
    delta: float | None
    columns: list
    scale: np.ndarray
    noise_mean: np.ndarray
    noise_sd: np.ndarray
    realised_sd: np.ndarray

    def parameters(self) -> dict:
        """What an analyst needs to correct estimates (the JSON written beside the release)."""
        return {"method": self.method, "source": "sdcMicro addNoise (method " + repr(self.method) + ")",
                "noise_percent": self.noise, "delta": self.delta,
                "model": "released_j = scale_j * original_j + e_j, e_j independent of the data with mean noise_mean_j "
                         "and standard deviation noise_sd_j" + ("; the e_j jointly normal with covariance "
                                                               "(noise_percent/100) * cov(original)"
                                                               if self.method == "correlated" else
                                                               "; the e_j independent normals"),
                "columns": {c: {"scale": float(a), "noise_mean": float(m), "noise_sd": float(s)}
                            for c, a, m, s in zip(self.columns, self.scale, self.noise_mean, self.noise_sd)}}


def add_noise(X, method: str = "additive", noise: float = 150.0, *, delta: float = 0.1,
              random_state=None) -> NoiseResult:
    """Release the numeric columns of ``X`` with noise (see the module docstring for each
    ``method``'s formula). ``noise``: percent (sdcMicro's default 150); ``delta``: correlated2's
    parameter in (0, 1) (sdcMicro's default 0.1); ``random_state``: seed or Generator."""
    if method not in METHODS:
        raise ParameterError(f"unknown noise method {method!r} (use one of {', '.join(METHODS)})")
    if isinstance(noise, bool) or not isinstance(noise, (int, float, np.integer, np.floating)) \
            or not np.isfinite(noise) or noise < 0:
        raise ParameterError(f"noise must be a percentage >= 0, got {noise!r}")
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.floating)) or not 0 < delta < 1:
        raise ParameterError(f"delta must lie strictly between 0 and 1, got {delta!r}")
    frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X, dtype=np.float64))
    M = check_matrix(frame, name="data", missing=True)
    present = ~np.isnan(M)
    if (present.sum(axis=0) < 2).any():
        j = int(np.argmax(present.sum(axis=0) < 2))
        raise InputError(f"column {frame.columns[j]!r} has fewer than 2 values: its standard deviation is undefined")
    rng = check_random_state(random_state)
    n, d = M.shape
    sd = np.array([np.std(M[present[:, j], j], ddof=1) for j in range(d)])
    mean = np.array([np.mean(M[present[:, j], j]) for j in range(d)])
    scale, shift = np.ones(d), np.zeros(d)
    if method == "additive":
        sigma = noise / 100.0 * sd
        E = rng.standard_normal((n, d)) * sigma
    elif method == "correlated":
        complete = present.all(axis=1)
        if complete.sum() < 2:
            raise InputError("correlated noise needs at least 2 records without a missing value (cov(na.omit(x)))")
        S = np.atleast_2d(np.cov(M[complete], rowvar=False, ddof=1))
        cov = noise / 100.0 * S
        sigma = np.sqrt(np.diag(cov))
        E = _multivariate_normal(rng, cov, n)
    else:
        a = np.sqrt(1.0 - delta * delta)
        scale, shift, sigma = np.full(d, a), (1.0 - a) * mean, delta * sd
        E = shift + rng.standard_normal((n, d)) * sigma
    out = scale * M + E  # NaN stays NaN
    realised = np.array([np.std(E[present[:, j], j], ddof=1) for j in range(d)])
    released = pd.DataFrame(out, columns=frame.columns, index=frame.index)
    return NoiseResult(released, method, None if method == "correlated2" else float(noise),
                       float(delta) if method == "correlated2" else None, [str(c) for c in frame.columns],
                       scale, shift, sigma, realised)


def _multivariate_normal(rng, cov: np.ndarray, n: int) -> np.ndarray:
    """n draws of N(0, cov) (cov positive semi-definite: a factor from its eigendecomposition, so a
    singular covariance, e.g. two proportional columns, is fine)."""
    w, V = np.linalg.eigh(cov)
    factor = V * np.sqrt(np.clip(w, 0.0, None))
    return rng.standard_normal((n, cov.shape[0])) @ factor.T


def noise_sd_interval(sigma: float, m: int, alpha: float = 1e-6) -> tuple[float, float]:
    """The range of the sample standard deviation of m draws of N(mu, sigma^2) outside which the
    draws are not that law at level ``alpha`` (two-sided): (m - 1) s^2 / sigma^2 ~ chi^2(m - 1)."""
    lo, hi = stats.chi2.ppf([alpha / 2, 1 - alpha / 2], m - 1)
    return sigma * np.sqrt(lo / (m - 1)), sigma * np.sqrt(hi / (m - 1))


@dataclass
class NoisePromise:
    """What a noise release promises (checked on the released records before anything is
    written): in every column, the released value minus ``scale`` times the original (the noise
    drawn) has a sample standard deviation within the chi-square range of the published
    ``noise_sd`` (:func:`noise_sd_interval`, level ``alpha`` per column, Bonferroni over the
    columns), a mean within 6 standard errors of the published mean, and missing values exactly
    where the original has them. ``original``: the original columns in released order."""

    original: pd.DataFrame
    result: NoiseResult
    alpha: float = 1e-6
    columns: tuple = ()  # no k-anonymity classes (what attribute_lines reads)
    mechanism: str = "noise addition"

    def check(self, data: pd.DataFrame) -> None:
        r = self.result
        for j, c in enumerate(r.columns):
            x = self.original[c].to_numpy(np.float64)
            y = pd.to_numeric(data[c], errors="coerce").to_numpy(np.float64)
            if not np.array_equal(np.isnan(x), np.isnan(y)):
                raise GuaranteeError(f"{c}: the release's missing values are not the original's; nothing written")
            e = (y - r.scale[j] * x)[~np.isnan(x)]
            sigma = float(r.noise_sd[j])
            if sigma == 0:
                if np.abs(e - r.noise_mean[j]).max(initial=0) > 1e-9 * (1 + np.abs(x[~np.isnan(x)]).max(initial=0)):
                    raise GuaranteeError(f"{c}: noise of sd 0 published but values changed; nothing written")
                continue
            lo, hi = noise_sd_interval(sigma, e.size, self.alpha / len(r.columns))
            s = float(np.std(e, ddof=1))
            if not lo <= s <= hi:
                raise GuaranteeError(f"{c}: the published noise sd {sigma:.6g} does not match the noise released "
                                     f"(sample sd {s:.6g}, outside {lo:.6g}..{hi:.6g}); nothing written")
            if abs(float(e.mean()) - r.noise_mean[j]) > 6 * sigma / np.sqrt(e.size):
                raise GuaranteeError(f"{c}: the noise released has mean {e.mean():.6g}, not the published "
                                     f"{r.noise_mean[j]:.6g}; nothing written")
