"""Participation models fitted on a previous wave (issue 18.3; paper 1, Sec. III: the pi_j of the
participation model I_j ~ Ber(pi_j) are known to the designer, here estimated).

A previous wave of the same frame records who responded (a 0/1 column). A logistic regression on
chosen covariates x_j,

    pi_j = expit(eta_j),   eta_j = b0 + x_j' b,   expit(t) = 1 / (1 + exp(-t)),

fitted by maximum likelihood (statsmodels' ``Logit``, Newton-Raphson), gives every record of the
new frame its pi_j. Robust option, so that an optimistic model does not break the guarantee:

    pi_j = expit(eta_j - z_c se_j) / (1 + F),   se_j = sqrt(x~_j' Cov x~_j),   x~_j = (1, x_j),

with ``confidence`` c: z_c = Phi^{-1}(c) and Cov the estimated covariance of (b0, b) (inverse
observed information), i.e. the one-sided Wald lower bound of the linear predictor eta_j (the
delta method on eta_j, which is linear in the coefficients, so se_j is exact given Cov; the
normality of the estimates is asymptotic) carried through the increasing expit. The bound holds
for each record at level c, not for all records at once. ``optimism`` F >= 0 is the office's stated
bound on how much too high the model may be (e.g. participation falling between waves: true
pi_j >= model pi_j / (1 + F)); without ``confidence``, pi_j = expit(eta_j) / (1 + F).

Why a lower pi_j is the safe side: the cell failure qbar = P{0 < K < k} has
d qbar / d pi_j = P{K_-j = 0} - P{K_-j = k - 1} (K_-j: the other records' respondents), negative
when k - 1 respondents are likelier than none, as in any safe cell expecting more than k
respondents. It is the practical regime, not a theorem for every cell (qbar is not monotone in pi).

The specification records the model (``to_spec``) so that anyone holding the frame recomputes the
pi_j (:func:`participation_from_spec`), with the very code the design used.

A pi_j that underflows to 0 (eta_j below about -745) is refused: Algorithm A takes pi_j in (0, 1]
(:func:`~probanon.survey.anonymity.check_participations`), and rounding a record that the model
says never responds up to a tiny positive pi_j would hide a model out of its range.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np
import pandas as pd
from scipy import special, stats

from .._validation import check_matrix, row_label
from ..data import select_columns
from ..errors import InputError, NotFittedError, ParameterError, SpecificationError

MAX_ITERATIONS = 100  # Newton-Raphson steps of the fit
SYMMETRY_RTOL = 1e-9  # a specification's covariance: symmetric to this relative tolerance


def _covariate_list(covariates) -> list:
    if isinstance(covariates, str):  # one name
        covariates = [covariates]
    if not isinstance(covariates, (list, tuple)) or not covariates:
        raise ParameterError(f"covariates must be a non-empty list of column names, got {covariates!r}")
    if len(set(covariates)) != len(covariates):
        raise ParameterError("a covariate is named twice")
    return list(covariates)


def _check_confidence(confidence, error=ParameterError):
    if confidence is None:
        return None
    if (isinstance(confidence, bool) or not isinstance(confidence, numbers.Real)
            or not 0.5 < float(confidence) < 1.0):
        raise error(f"confidence of the participation lower bound must be in (0.5, 1), got {confidence!r}")
    return float(confidence)


def _check_optimism(optimism, error=ParameterError) -> float:
    if (isinstance(optimism, bool) or not isinstance(optimism, numbers.Real)
            or not (math.isfinite(float(optimism)) and float(optimism) >= 0.0)):
        raise error(f"optimism (how much too high the model may be) must be a number >= 0, got {optimism!r}")
    return float(optimism)


def _covariates_of(frame, covariates, name: str) -> np.ndarray:
    """The covariates of ``frame`` as a finite float matrix; InputError names what is missing."""
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"{name}: a participation model needs a table with the covariates "
                         f"{', '.join(map(str, covariates))}")
    missing = [c for c in covariates if c not in frame.columns]
    if missing:
        raise InputError(f"{name} has no covariate {', '.join(map(repr, missing))}")
    select_columns(frame, covariates)  # text in a numeric column: named with its line
    return check_matrix(frame[covariates], name=name)


def _responses(frame: pd.DataFrame, responded: str) -> np.ndarray:
    if not isinstance(frame, pd.DataFrame):
        raise InputError("the previous wave must be a table with a 0/1 responded column")
    if responded not in frame.columns:
        raise InputError(f"the previous wave has no responded column {responded!r}")
    raw = frame[responded]
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isin(values, (0.0, 1.0))  # NaN, text and other numbers
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        value = raw.iloc[i].item() if isinstance(raw.iloc[i], np.generic) else raw.iloc[i]
        raise InputError(f"column {responded!r} must be 0 or 1 ({row_label(frame, i)}: {value!r})")
    if values.min() == values.max():
        who = "everyone" if values[0] == 1.0 else "no-one"
        raise InputError(f"in the previous wave {who} responded ({responded!r} is {int(values[0])} in all "
                         f"{values.size} records): no participation model can be fitted")
    return values


def _probabilities(frame, covariates, beta, covariance, confidence, optimism, name) -> np.ndarray:
    """pi_j of every record of ``frame`` (module docstring formulas), each in (0, 1]."""
    X = _covariates_of(frame, covariates, name)
    Xt = np.column_stack([np.ones(X.shape[0]), X])
    eta = Xt @ beta
    if confidence is not None:
        se = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", Xt, covariance, Xt), 0.0))
        eta = eta - stats.norm.ppf(confidence) * se
    pis = special.expit(eta) / (1.0 + optimism)
    zero = np.flatnonzero(~(pis > 0.0))
    if zero.size:
        i = int(zero[0])
        raise InputError(f"{name}, {row_label(frame, i)}: the participation model gives probability 0 "
                         f"(linear predictor {eta[i]:.4g}{', lower bound' if confidence is not None else ''}): "
                         f"the record lies far outside the previous wave")
    return pis


class LogisticParticipation:
    """Logistic participation model fitted on a previous wave (module docstring).

    ``covariates``: column names (a list, or one name); ``responded``: the previous wave's 0/1
    column; ``confidence``: None or c in (0.5, 1), design with the one-sided lower confidence bound
    of each pi_j; ``optimism``: F >= 0, pi_j further divided by 1 + F.

    After :meth:`fit`: ``covariates_``, ``intercept_`` (b0), ``coef_`` (b), ``covariance_`` (of
    (b0, b), (p+1) x (p+1)), ``n_`` (records of the wave).
    """

    def __init__(self, covariates, responded: str = "responded", confidence=None, optimism: float = 0.0):
        self.covariates = covariates
        self.responded = responded
        self.confidence = confidence
        self.optimism = optimism

    def fit(self, wave: pd.DataFrame) -> LogisticParticipation:
        """Maximum-likelihood logistic regression of ``responded`` on the covariates."""
        import statsmodels.api as sm
        from statsmodels.tools import sm_exceptions

        covariates = _covariate_list(self.covariates)
        if not isinstance(self.responded, str) or not self.responded:
            raise ParameterError(f"responded must be a column name, got {self.responded!r}")
        if self.responded in covariates:
            raise ParameterError(f"the responded column {self.responded!r} cannot be a covariate")
        confidence = _check_confidence(self.confidence)
        optimism = _check_optimism(self.optimism)
        y = _responses(wave, self.responded)
        X = _covariates_of(wave, covariates, "the previous wave")
        Xt = np.column_stack([np.ones(X.shape[0]), X])
        if np.linalg.matrix_rank(Xt) < Xt.shape[1]:
            raise InputError(f"the covariates {', '.join(map(repr, covariates))} are collinear or constant "
                             f"in the previous wave ({X.shape[0]} records): their coefficients are not identified")
        failed = ("the logistic fit of the previous wave did not converge (perfect separation: "
                  "do the covariates predict exactly who responded?)")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = sm.Logit(y, Xt).fit(method="newton", maxiter=MAX_ITERATIONS, disp=0)
            except (sm_exceptions.PerfectSeparationError, np.linalg.LinAlgError):
                raise InputError(failed) from None
        trouble = (sm_exceptions.ConvergenceWarning, sm_exceptions.PerfectSeparationWarning,
                   sm_exceptions.HessianInversionWarning)
        beta = np.asarray(result.params, dtype=np.float64)
        cov = np.asarray(result.cov_params(), dtype=np.float64)
        if (not result.mle_retvals.get("converged", False) or any(issubclass(w.category, trouble) for w in caught)
                or not (np.isfinite(beta).all() and np.isfinite(cov).all())):
            raise InputError(failed)
        self.covariates_ = covariates
        self.intercept_ = float(beta[0])
        self.coef_ = beta[1:]
        self.covariance_ = (cov + cov.T) / 2.0  # symmetric to the last bit (it is published)
        self.n_ = int(y.size)
        self._confidence, self._optimism = confidence, optimism
        return self

    def _check_fitted(self):
        if not hasattr(self, "coef_"):
            raise NotFittedError("this LogisticParticipation is not fitted yet: call fit first")

    def probabilities(self, frame: pd.DataFrame, name: str = "the new frame") -> np.ndarray:
        """pi_j of every record of ``frame`` (a table with the covariates), each in (0, 1];
        ``name``: how error messages call the frame."""
        self._check_fitted()
        return participation_from_spec(self.to_spec(), frame, name)

    def to_spec(self) -> dict:
        """The model as published in a survey specification (``guarantee.participation``)."""
        self._check_fitted()
        lower = None
        if self._confidence is not None:
            lower = {"confidence": self._confidence, "covariance": self.covariance_.tolist()}
        return {"model": "logistic", "covariates": list(self.covariates_), "intercept": self.intercept_,
                "coefficients": self.coef_.tolist(), "responded": self.responded, "wave_records": self.n_,
                "lower_bound": lower, "optimism": self._optimism}


def _number(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise SpecificationError(f"specification: participation {what} must be a finite number, got {value!r}")
    return float(value)


def _field(model: dict, key: str):
    if key not in model:
        raise SpecificationError(f"specification: missing participation {key!r}")
    return model[key]


def check_model_spec(model) -> dict:
    """A logistic model of a specification, checked: ``covariates``, ``beta`` (b0, b),
    ``covariance`` (None without a lower bound), ``confidence``, ``optimism``. Any missing or
    ill-typed field raises :class:`SpecificationError` (one line)."""
    if not isinstance(model, dict) or model.get("model") != "logistic":
        raise SpecificationError("specification: the participation model is not a logistic model")
    covariates = _field(model, "covariates")
    if (not isinstance(covariates, list) or not covariates or not all(isinstance(c, str) and c for c in covariates)
            or len(set(covariates)) != len(covariates)):
        raise SpecificationError(f"specification: participation covariates must be distinct column names, "
                                 f"got {covariates!r}")
    coefficients = _field(model, "coefficients")
    if not isinstance(coefficients, list) or len(coefficients) != len(covariates):
        raise SpecificationError(f"specification: {len(covariates)} participation covariates need as many "
                                 f"coefficients, got {coefficients!r}")
    beta = np.array([_number(_field(model, "intercept"), "intercept")]
                    + [_number(b, "coefficient") for b in coefficients])
    responded = _field(model, "responded")
    if not isinstance(responded, str) or not responded:
        raise SpecificationError(f"specification: participation responded must be a column name, got {responded!r}")
    records = _field(model, "wave_records")
    if type(records) is not int or records < 1:
        raise SpecificationError(f"specification: participation wave_records must be an integer >= 1, got {records!r}")
    optimism = _check_optimism(_field(model, "optimism"), SpecificationError)
    lower = _field(model, "lower_bound")
    confidence = covariance = None
    if lower is not None:
        if not isinstance(lower, dict):
            raise SpecificationError(f"specification: participation lower_bound must be null or an object, got {lower!r}")
        confidence = _check_confidence(_field(lower, "confidence"), SpecificationError)
        rows, p = _field(lower, "covariance"), beta.size
        if not isinstance(rows, list) or len(rows) != p or not all(isinstance(r, list) and len(r) == p for r in rows):
            raise SpecificationError(f"specification: participation covariance must be {p} x {p} numbers")
        covariance = np.array([[_number(v, "covariance") for v in r] for r in rows])
        scale = max(float(np.abs(covariance).max()), np.finfo(float).tiny)
        if (not np.allclose(covariance, covariance.T, rtol=SYMMETRY_RTOL, atol=SYMMETRY_RTOL * scale)
                or np.linalg.eigvalsh(covariance).min() < -SYMMETRY_RTOL * scale):
            raise SpecificationError("specification: participation covariance is not symmetric positive semi-definite")
    return {"covariates": covariates, "beta": beta, "covariance": covariance, "confidence": confidence,
            "optimism": optimism}


def participation_from_spec(model: dict, frame: pd.DataFrame, name: str = "the new frame") -> np.ndarray:
    """pi_j of every record of ``frame`` recomputed from a specification's logistic model alone
    (:func:`check_model_spec` first)."""
    m = check_model_spec(model)
    return _probabilities(frame, m["covariates"], m["beta"], m["covariance"], m["confidence"], m["optimism"], name)
