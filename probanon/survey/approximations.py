"""Closed-form approximations of the effective anonymity n_min (paper 1, Sec. VI.C).

Rebollo-Monedero, Forne, Soriano, Puiggali, "p-Probabilistic k-anonymous microaggregation
for the anonymization of surveys with uncertain participation", Inf. Sci. (2016),
doi:10.1016/j.ins.2016.12.002 -- Sec. VI.C.3 (k = 2) and Sec. VI.C.4 (any k).

All approximations assume a constant participation pi (pibar = 1 - pi), a small acceptable
cell failure pbar and hence a large n_min. They return the REAL value n~ (before any
ceiling); the exact n_min of Algorithm A is :func:`probanon.survey.anonymity.n_min`.

==========================  ==========================================================
k = 2 (Sec. VI.C.3)          solutions of n pibar^n = (pibar / pi) pbar, i.e. x b^x = a
                             with a = (pibar / pi) pbar, b = pibar
``n_min_lambert_k2``         exact real solution x = W_{-1}(a ln b) / ln b
``n_min_k2_n0``              n~0 = ln a / ln b
``n_min_k2_n1``              n~1 (ln x linearised around n~0)
``n_min_k2_n2``              n~2 (ln x expanded to second order around n~0)
any k (Sec. VI.C.4)          kappa = (k - 1) / n
``n_min_kl``                 n~1 : -(1/n) ln pbar = D((k-1)/n || pi)  (solved with brentq)
``n_min_n1_prime``           n~1' : D replaced by its 2nd-order Taylor expansion at pi
``n_min_n1_second``          n~1'' : n~1' as a quadratic polynomial of sqrt(k - 1)
``n_min_n2``                 n~2 : D(kappa||pi) ~ -ln pibar (1 - kappa / pi)^2
==========================  ==========================================================

Every function takes ``(k, participation, risk)``. With participation = 1 there is no
uncertainty (n_min = k) and every formula degenerates; each function then returns its limit
as pi -> 1, which is k - 1 for all of them. Where a formula has no real value (a risk too
large for the asymptotic regime), a one-line :class:`~probanon.errors.ParameterError` is raised.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import lambertw, rel_entr

from .._validation import check_k
from ..errors import ParameterError
from .anonymity import check_participation, check_risk

__all__ = [
    "bernoulli_kl_divergence",
    "n_min_lambert_k2",
    "n_min_k2_n0",
    "n_min_k2_n1",
    "n_min_k2_n2",
    "n_min_kl",
    "n_min_n1_prime",
    "n_min_n1_second",
    "n_min_n2",
]


# --------------------------------------------------------------------------- helpers


def _args(k, participation, risk) -> tuple[int, float, float]:
    return check_k(k), check_participation(participation), check_risk(risk)


def _args_k2(k, participation, risk, name: str) -> tuple[float, float]:
    k, pi, pbar = _args(k, participation, risk)
    if k != 2:
        raise ParameterError(f"{name} is the k = 2 approximation of Sec. VI.C.3, got k = {k}")
    return pi, pbar


def _k2_logs(pi: float, pbar: float, name: str) -> tuple[float, float]:
    """ln a and ln b of x b^x = a with a = (pibar / pi) pbar, b = pibar (log domain, so a
    tiny pbar does not underflow). Requires a < 1 (otherwise n~0 <= 0)."""
    log_b = math.log1p(-pi)
    log_a = log_b - math.log(pi) + math.log(pbar)
    if not log_a < 0.0:
        raise ParameterError(f"{name}: needs (1 - pi) / pi * risk < 1, got pi = {pi!r}, risk = {pbar!r}")
    return log_a, log_b


def _finite(value: float, name: str, pi: float, pbar: float) -> float:
    if not math.isfinite(value):
        raise ParameterError(f"{name} is undefined for participation = {pi!r}, risk = {pbar!r} (risk too large)")
    return float(value)


def bernoulli_kl_divergence(kappa, participation):
    """Kullback-Leibler divergence D(kappa || pi) between Bernoulli(kappa) and Bernoulli(pi),
    in nats (Sec. VI.C.2).

    .. math:: D(\\kappa \\| \\pi) = \\kappa \\ln\\frac{\\kappa}{\\pi}
              + (1 - \\kappa) \\ln\\frac{1 - \\kappa}{1 - \\pi},

    with 0 ln 0 = 0 (``scipy.special.rel_entr``). Vectorised over NumPy arrays; returns
    +inf where kappa is not absolutely continuous w.r.t. pi (e.g. kappa < 1 = pi).
    """
    kappa = np.asarray(kappa, dtype=np.float64)
    pi = np.asarray(participation, dtype=np.float64)
    d = rel_entr(kappa, pi) + rel_entr(1.0 - kappa, 1.0 - pi)
    return d[()] if d.ndim == 0 else d


# --------------------------------------------------------------------------- k = 2


def n_min_lambert_k2(k, participation, risk) -> float:
    """Real solution of the k = 2 effective-anonymity equation via the Lambert W function.

    For k = 2, qbar(n) = P{K_n = 1} = n pibar^(n-1) pi, and qbar(n) = pbar reads
    x b^x = a with a = (pibar / pi) pbar, b = pibar (Sec. VI.C.3). Its solution on the
    decreasing side of qbar (x >= -1 / ln b) is

    .. math:: \\tilde n = \\frac{W_{-1}(a \\ln b)}{\\ln b},

    with W_{-1} the lower branch of the Lambert W function (``scipy.special.lambertw``).

    Parameters
    ----------
    k : int
        Target anonymity; must be 2.
    participation : float
        Constant participation probability pi in (0, 1].
    risk : float
        Acceptable cell failure pbar in (0, 1).

    Returns
    -------
    float
        The real root n~ (k - 1 = 1 in the limit pi -> 1). ``ceil(n~)`` is the smallest
        cell size beyond which every cell is safe; it equals n_min unless qbar(2) <= pbar
        already on the increasing side of qbar (small pi), where n_min = 2.

    Raises
    ------
    ParameterError
        If k != 2, the arguments are out of range, or a ln b < -1/e (then qbar(n) < pbar
        for every real n: the equation has no real solution).

    Examples
    --------
    >>> import math
    >>> math.ceil(n_min_lambert_k2(2, 0.5, 1e-6))
    25
    """
    pi, pbar = _args_k2(k, participation, risk, "n_min_lambert_k2")
    if pi == 1.0:
        return 1.0
    log_a = math.log1p(-pi) - math.log(pi) + math.log(pbar)
    log_b = math.log1p(-pi)
    s = log_a + math.log(-log_b)  # ln(-z), z = a ln b < 0
    if s > -1.0 + 1e-12:
        raise ParameterError(f"n_min_lambert_k2: no real solution for participation = {pi!r}, risk = {pbar!r} "
                             f"(qbar(n) < risk for every n)")
    z = -math.exp(s)
    if z < -1e-300:
        w = float(lambertw(z, -1).real)
        if math.isnan(w):  # z rounded just below the branch point -1/e, where W = -1
            w = -1.0
    else:  # z underflows: solve w + ln(-w) = ln(-z) on w <= -1 by fixed-point iteration
        w = s
        for _ in range(200):
            w_next = s - math.log(-w)
            if abs(w_next - w) <= 1e-15 * abs(w):
                break
            w = w_next
        w = w_next
    return _finite(w / log_b, "n_min_lambert_k2", pi, pbar)


def n_min_k2_n0(k, participation, risk) -> float:
    """Zeroth-order logarithmic approximation n~0 of n_min for k = 2 (Sec. VI.C.3).

    .. math:: \\tilde n_0 = \\frac{\\ln(\\frac{\\bar\\pi}{\\pi}\\bar p)}{\\ln\\bar\\pi}
              = 1 + \\log_{\\bar\\pi}\\frac{\\bar p}{\\pi}
              = \\frac{-\\ln\\bar p + \\ln\\frac{\\pi}{\\bar\\pi}}{-\\ln\\bar\\pi},

    the solution of x b^x = a (a = (pibar/pi) pbar, b = pibar) neglecting ln x against
    x ln b. n~0 ~ n_min as pbar -> 0 (relative, not absolute, error vanishes).

    Parameters and raised errors as in :func:`n_min_k2_n1`.
    """
    pi, pbar = _args_k2(k, participation, risk, "n_min_k2_n0")
    if pi == 1.0:
        return 1.0
    log_a, log_b = _k2_logs(pi, pbar, "n_min_k2_n0")
    return _finite(log_a / log_b, "n_min_k2_n0", pi, pbar)


def n_min_k2_n1(k, participation, risk) -> float:
    """First-order logarithmic approximation n~1 of n_min for k = 2 (Sec. VI.C.3).

    Linearising ln x around x0 = n~0 in ln x + x ln b = ln a gives

    .. math:: \\tilde n_1 = \\Bigl(1 - \\frac{\\ln \\tilde n_0}{1 + \\ln a}\\Bigr) \\tilde n_0,
              \\qquad a = \\frac{\\bar\\pi}{\\pi}\\bar p,\\quad
              \\tilde n_0 = \\frac{\\ln a}{\\ln\\bar\\pi}.

    The paper (Fig. 10) finds ceil(n~1) an upper bound of n_min.

    Parameters
    ----------
    k : int
        Target anonymity; must be 2.
    participation : float
        Constant participation pi in (0, 1] (limit 1 returned at pi = 1).
    risk : float
        Acceptable cell failure pbar in (0, 1).

    Returns
    -------
    float
        n~1 (before ceiling).

    Raises
    ------
    ParameterError
        If k != 2, an argument is out of range, or (1 - pi) / pi * pbar >= 1 (or = 1/e),
        where the expansion is undefined.
    """
    pi, pbar = _args_k2(k, participation, risk, "n_min_k2_n1")
    if pi == 1.0:
        return 1.0
    log_a, log_b = _k2_logs(pi, pbar, "n_min_k2_n1")
    x0 = log_a / log_b
    denom = 1.0 + log_a
    if denom == 0.0:
        raise ParameterError(f"n_min_k2_n1 is undefined for participation = {pi!r}, risk = {pbar!r} (1 + ln a = 0)")
    return _finite((1.0 - math.log(x0) / denom) * x0, "n_min_k2_n1", pi, pbar)


def n_min_k2_n2(k, participation, risk) -> float:
    """Second-order logarithmic approximation n~2 of n_min for k = 2 (Sec. VI.C.3).

    Expanding ln x to second order around x0 = n~0 in ln x + x ln b = ln a gives

    .. math:: \\tilde n_2 = \\Bigl(2 + \\ln a + \\sqrt{(1 + \\ln a)^2 + 2\\ln\\tilde n_0}\\Bigr)
              \\tilde n_0, \\qquad a = \\frac{\\bar\\pi}{\\pi}\\bar p,\\quad
              \\tilde n_0 = \\frac{\\ln a}{\\ln\\bar\\pi}.

    The paper (Fig. 10) finds ceil(n~2) optimistic but more often equal to n_min than n~1.

    Parameters and raised errors as in :func:`n_min_k2_n1`; also raises when the
    discriminant (1 + ln a)^2 + 2 ln n~0 is negative.
    """
    pi, pbar = _args_k2(k, participation, risk, "n_min_k2_n2")
    if pi == 1.0:
        return 1.0
    log_a, log_b = _k2_logs(pi, pbar, "n_min_k2_n2")
    x0 = log_a / log_b
    disc = (1.0 + log_a) ** 2 + 2.0 * math.log(x0)
    if disc < 0.0:
        raise ParameterError(f"n_min_k2_n2 is undefined for participation = {pi!r}, risk = {pbar!r} (negative discriminant)")
    return _finite((2.0 + log_a + math.sqrt(disc)) * x0, "n_min_k2_n2", pi, pbar)


# --------------------------------------------------------------------------- any k


def n_min_kl(k, participation, risk) -> float:
    """Method-of-types approximation n~1 of n_min: root of the KL-divergence equation
    (Sec. VI.C.4; verified in Sec. VII.D, Fig. 8-9).

    .. math:: -\\frac{1}{\\tilde n}\\ln\\bar p = D\\Bigl(\\frac{k-1}{\\tilde n}\\Bigm\\|\\pi\\Bigr),
              \\qquad D(\\kappa\\|\\pi) = \\kappa\\ln\\frac{\\kappa}{\\pi}
              + (1-\\kappa)\\ln\\frac{1-\\kappa}{1-\\pi}.

    On n > (k - 1) / pi (kappa < pi) the function n D((k-1)/n || pi) increases from 0 to
    infinity (its derivative is ln((1 - kappa) / pibar) > 0), so the root there is unique;
    it is found with ``scipy.optimize.brentq``. For k = 1 the root is ln pbar / ln pibar.

    Parameters
    ----------
    k : int
        Target anonymity k >= 1.
    participation : float
        Constant participation pi in (0, 1] (at pi = 1 the limit k - 1 is returned).
    risk : float
        Acceptable cell failure pbar in (0, 1).

    Returns
    -------
    float
        n~ (before ceiling).

    Examples
    --------
    >>> round(n_min_kl(10, 0.5, 1e-6), 2)     # NOTES.md: n_min = 53
    55.39
    """
    k, pi, pbar = _args(k, participation, risk)
    if pi == 1.0:
        return float(k - 1)
    log_p = math.log(pbar)
    if k == 1:
        return log_p / math.log1p(-pi)
    m = float(k - 1)

    def g(n):
        return n * float(bernoulli_kl_divergence(m / n, pi)) + log_p

    lo = m / pi
    hi = 2.0 * lo + 1.0
    while g(hi) <= 0.0:
        hi *= 2.0
    return float(brentq(g, lo, hi, xtol=1e-12, rtol=4 * np.finfo(float).eps, maxiter=500))


def n_min_n1_prime(k, participation, risk) -> float:
    """Quadratic (Taylor) approximation n~1' of n_min (Sec. VI.C.4).

    Replacing D(kappa||pi) in the KL equation of :func:`n_min_kl` by its second-order
    expansion (kappa - pi)^2 / (2 pi pibar) around kappa = pi gives

    .. math:: \\tilde n_1' = \\frac{k - 1 - \\bar\\pi\\ln\\bar p
              + \\sqrt{-\\bar\\pi\\ln\\bar p\\,\\bigl(2(k-1) - \\bar\\pi\\ln\\bar p\\bigr)}}{\\pi}
              = \\frac{1}{\\pi}(A + G)\\bigl(2(k-1) - \\bar\\pi\\ln\\bar p,\\;
              -\\bar\\pi\\ln\\bar p\\bigr),

    with A and G the arithmetic and geometric means of the two entries (the paper's
    second form).

    Parameters
    ----------
    k : int
        Target anonymity k >= 1.
    participation : float
        Constant participation pi in (0, 1].
    risk : float
        Acceptable cell failure pbar in (0, 1).

    Returns
    -------
    float
        n~1' (before ceiling).

    Examples
    --------
    >>> round(n_min_n1_prime(10, 0.5, 1e-6), 2)
    58.05
    """
    k, pi, pbar = _args(k, participation, risk)
    c = -(1.0 - pi) * math.log(pbar)  # -pibar ln pbar >= 0
    m = float(k - 1)
    return (m + c + math.sqrt(c * (2.0 * m + c))) / pi


def n_min_n1_second(k, participation, risk) -> float:
    """Approximation n~1'' of n_min, quadratic in sqrt(k - 1) (Sec. VI.C.4).

    Simplifying n~1' with sqrt(x + a) - sqrt(x) -> 0:

    .. math:: \\tilde n_1'' = \\frac{1}{\\pi}\\Bigl(k - 1 + \\sqrt{-2\\bar\\pi\\ln\\bar p}\\,
              \\sqrt{k-1} - \\bar\\pi\\ln\\bar p\\Bigr).

    Parameters
    ----------
    k : int
        Target anonymity k >= 1.
    participation : float
        Constant participation pi in (0, 1].
    risk : float
        Acceptable cell failure pbar in (0, 1).

    Returns
    -------
    float
        n~1'' (before ceiling).

    Examples
    --------
    >>> round(n_min_n1_second(10, 0.5, 1e-6), 2)
    54.12
    """
    k, pi, pbar = _args(k, participation, risk)
    c = -(1.0 - pi) * math.log(pbar)
    m = float(k - 1)
    return (m + math.sqrt(2.0 * c) * math.sqrt(m) + c) / pi


def n_min_n2(k, participation, risk) -> float:
    """Heuristic quadratic approximation n~2 of n_min (Sec. VI.C.4).

    Using D(kappa||pi) ~ -ln pibar (1 - kappa / pi)^2 (the quadratic with D(0||pi) = -ln pibar
    and D(pi||pi) = 0) in the KL equation gives

    .. math:: \\tilde n_2 = \\frac{2(k-1)\\ln\\bar\\pi + \\pi\\ln\\bar p
              - \\sqrt{\\pi\\ln\\bar p\\,(\\pi\\ln\\bar p + 4(k-1)\\ln\\bar\\pi)}}{2\\pi\\ln\\bar\\pi}

    (homogeneous in the logarithms, so any base gives the same value).

    Parameters
    ----------
    k : int
        Target anonymity k >= 1.
    participation : float
        Constant participation pi in (0, 1] (at pi = 1 the limit k - 1 is returned).
    risk : float
        Acceptable cell failure pbar in (0, 1).

    Returns
    -------
    float
        n~2 (before ceiling).

    Examples
    --------
    >>> round(n_min_n2(10, 0.5, 1e-6), 2)
    49.37
    """
    k, pi, pbar = _args(k, participation, risk)
    if pi == 1.0:
        return float(k - 1)
    log_b = math.log1p(-pi)
    c = pi * math.log(pbar)
    m = float(k - 1)
    return (2.0 * m * log_b + c - math.sqrt(c * (c + 4.0 * m * log_b))) / (2.0 * pi * log_b)
