"""Recoding plus local suppression in one step, and the comparison of candidate recodings on the
risk-utility map (issue 43.3).

:func:`kanon` is sdcMicro's ``kAnon`` (global recoding, then local suppression to k-anonymity):
the recoding (:func:`probanon.categorical.recoding.recode`) is applied, then
:func:`probanon.categorical.suppression.local_suppression` suppresses the key values still
breaking k. :func:`compare_strategies` does this for several candidate recodings and tabulates,
per candidate, the values suppressed (in total and per key), the records changed and the
information lost per key.

Information loss by entropy (Willenborg & de Waal, *Elements of Statistical Disclosure
Control*, 2001, §5.5: the entropy-based loss of global recoding and local suppression; de Waal &
Willenborg 1999): the original value X of a key is known to the analyst only through its
released value Y (a recoded category, or missing where suppressed), so the information lost on
that key is the conditional entropy

    H(X | Y) = H(X, Y) - H(Y) = - sum_{x,y} p(x, y) log2 p(x | y)   (bits per record),

0 when every value is released as it was, H(X) when the key is released as one category or
suppressed everywhere; its share of the original entropy, H(X | Y) / H(X), is the information
loss per key (0..1). p are the relative frequencies of the records (a missing value is a
category of its own in X and in Y).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import InputError
from .recoding import RecodeReport, recode


def _codes(values: pd.Series) -> np.ndarray:
    return pd.factorize(values.reset_index(drop=True), use_na_sentinel=False)[0].astype(np.int64)


def entropy(values) -> float:
    """Shannon entropy of a column's distribution, bits: H = - sum_v p_v log2 p_v (a missing value
    a category of its own)."""
    counts = np.bincount(_codes(pd.Series(values)))
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log2(p)).sum()) if p.size else 0.0


def entropy_lost(original, released) -> float:
    """H(X | Y) of the module docstring, bits per record: what the released values ``released``
    leave unknown of the ``original`` values (aligned record by record)."""
    x, y = _codes(pd.Series(original)), _codes(pd.Series(released))
    if x.size != y.size:
        raise InputError("entropy_lost: the original and released columns differ in length")
    if not x.size:
        return 0.0
    joint = x * (y.max() + 1) + y
    return max(0.0, entropy(joint) - entropy(y))


@dataclass
class KAnonResult:
    """What :func:`kanon` made: ``data`` (recoded, then suppressed), ``recoding``
    (:class:`~probanon.categorical.recoding.RecodeReport`) and ``suppression`` (the
    :class:`~probanon.categorical.suppression.SuppressionResult`)."""

    data: pd.DataFrame
    recoding: RecodeReport
    suppression: object


def kanon(data: pd.DataFrame, keys: list, k: int = 3, recodings=None, *, weights=None, **options) -> KAnonResult:
    """sdcMicro's ``kAnon``, recoding first: ``recodings`` (a list of recoding steps) applied to
    ``data``, then local suppression of the keys to ``k``-anonymity; ``options`` are those of
    :func:`~probanon.categorical.suppression.local_suppression` (``combinations``, ``importance``,
    ``strata``, ``missing``, ``risk_threshold``, ``method``, ``random_state``, ``progress``);
    ``weights``: the sampling weights (a column name or values), for the tail means of top/bottom
    coding and the individual-risk variant of the suppression."""
    from .suppression import local_suppression

    recoded, report = recode(data, recodings or [], weights=weights)
    threshold = options.get("risk_threshold") is not None  # the weights enter the suppression with a risk threshold
    result = local_suppression(recoded, list(keys), k, weights=weights if threshold else None, **options)
    return KAnonResult(data=result.data, recoding=report, suppression=result)


def information_loss(original: pd.DataFrame, released: pd.DataFrame, keys: list) -> pd.DataFrame:
    """Per key (rows; the two tables aligned record by record): ``changed`` (records whose value
    was released otherwise, :func:`probanon.release.differing`), ``suppressed`` (of those, values
    released missing), ``categories`` before and after (``categories_released``; a missing value
    not counted), ``entropy`` H(X) of the original, ``entropy_lost`` H(X | Y) and
    ``information_loss`` H(X | Y) / H(X) (module docstring; 0 for a constant key)."""
    from ..release import differing

    rows = {}
    for c in keys:
        x, y = original[c].reset_index(drop=True), released[c].reset_index(drop=True)
        h, lost = entropy(x), entropy_lost(x, y)
        changed = differing(x, y)
        rows[c] = {"changed": int(changed.sum()), "suppressed": int((changed & y.isna().to_numpy()).sum()),
                   "categories": int(x.nunique()), "categories_released": int(y.nunique()),
                   "entropy": h, "entropy_lost": lost, "information_loss": lost / h if h > 0 else 0.0}
    return pd.DataFrame.from_dict(rows, orient="index")


def compare_strategies(data: pd.DataFrame, keys: list, k: int, candidates: dict, *, weights=None,
                       **options) -> pd.DataFrame:
    """The risk-utility map of candidate recodings: for each ``candidates`` entry (name: a list
    of recoding steps; an empty list is suppression alone), :func:`kanon` to ``k`` with
    ``options``, and one row: ``suppressed`` (values suppressed in total), ``suppressed_<key>``,
    ``records_changed`` (records with any key released otherwise than it was),
    ``entropy_lost_<key>`` (bits per record), ``information_loss_<key>`` (share of the key's
    entropy lost) and ``information_loss`` (their mean over the keys). Rows ordered by
    suppressions, then information loss."""
    from ..release import differing

    if not isinstance(candidates, dict) or not candidates:
        raise InputError("compare_strategies: give the candidate recodings as {name: steps}")
    keys = list(keys)
    rows = []
    for name, steps in candidates.items():
        result = kanon(data, keys, k, steps, weights=weights, **options)
        loss = information_loss(data, result.data, keys)
        changed = np.zeros(len(data), dtype=bool)
        for c in keys:
            changed |= differing(data[c], result.data[c])
        row = {"candidate": name, "suppressed": int(result.suppression.total),
               **{f"suppressed_{c}": int(result.suppression.n_suppressed.get(c, 0)) for c in keys},
               "records_changed": int(changed.sum()),
               **{f"entropy_lost_{c}": float(loss.loc[c, "entropy_lost"]) for c in keys},
               **{f"information_loss_{c}": float(loss.loc[c, "information_loss"]) for c in keys},
               "information_loss": float(loss["information_loss"].mean())}
        rows.append(row)
    table = pd.DataFrame(rows).sort_values(["suppressed", "information_loss"], kind="stable")
    return table.set_index("candidate")


__all__ = ["KAnonResult", "compare_strategies", "entropy", "entropy_lost", "information_loss", "kanon"]
