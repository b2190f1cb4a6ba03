"""The published survey specification (paper 1, Sec. IV.B: locally trusted respondents).

A JSON document that every respondent can check and apply alone:

    {"probanon_survey_spec": 1,
     "guarantee": {"k", "risk" (pbar), "participation": {"model": "constant", "pi"} or
                   {"model": "per-record"} or {"model": "logistic", ...}, "n_min", "cell_size", "records"},
     "function": the microaggregation function (standardisation, assignment rule, centroids),
     "cells": [{"size", "failure"} (+ "participation": sorted pi_j for per-record and logistic)],
     "distortion": D,
     "digest": "sha256:<hex of the canonical form of everything else>"}

A logistic model (issue 18.3, :mod:`.participation`: covariates, coefficients, an optional lower
confidence bound, the stated optimism) lets whoever holds the frame recompute every pi_j
(:func:`~.participation.participation_from_spec`; ``simulate_spec`` compares them with the cells'
lists). :func:`verify` has no frame: it checks the model's fields and, as for per-record
participation, every cell's failure from its declared pi_j.

The canonical form is ``json.dumps(spec_without_digest, sort_keys=True,
separators=(",", ":"), allow_nan=False)`` in UTF-8. :func:`verify` recomputes the digest and
every cell's failure from its declared size and the guarantee; :func:`assign` maps a
respondent's own quasi-identifiers to (cell, centroid) without the population.

The digest proves nothing by itself. It is computed from the specification's own content, so
whoever alters a specification (another function, other cells, a lower risk on paper) simply
recomputes it and the altered document verifies as well as the original. Only a digest received
through a second, trusted channel (the invitation letter, the office's web site, a phone call)
binds the specification to the collector: ``verify(spec, expected_digest=...)``
(``probanon survey verify SPEC --digest sha256:HEX``) compares the two.

Outcomes of :func:`verify` (and exit statuses of ``probanon survey verify``):

* the specification cannot be checked: unreadable, not JSON, another version, a missing or
  ill-typed field, a value out of range, a digest field that does not match the content (altered
  after its digest was computed), redundant fields that contradict each other (cells against the
  function, sizes against the records, a declared n_min or cell failure against its recomputed
  value): :class:`~probanon.errors.SpecificationError` (exit 2);
* the specification is well-formed and self-consistent but its digest differs from the expected
  one (not the document the collector published), or its guarantee does not hold (a cell whose
  failure, recomputed by Algorithm A, exceeds the stated risk): :class:`GuaranteeError`, a
  subclass listing every finding in ``problems`` (exit 1);
* otherwise a :class:`VerifiedSpec` (exit 0).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass

import numpy as np

from .._validation import read_json_document
from ..errors import ParameterError, SpecificationError
from ..microagg.function import MicroaggregationFunction, function_from_json
from .anonymity import (
    cell_failure,
    cells_log_failure,
    check_participation,
    check_participations,
    check_risk,
    effective_anonymity,
)
from .design import SurveyDesign
from .participation import check_model_spec

VERSION = 1
TOLERANCE = 1e-9  # relative agreement of a recomputed failure with the declared one
MAX_RECORDS = 10**8  # a larger declared table is refused (verification would not end)


def canonical_bytes(spec: dict) -> bytes:
    body = {key: value for key, value in spec.items() if key != "digest"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


def digest(spec: dict) -> str:
    return "sha256:" + hashlib.sha256(canonical_bytes(spec)).hexdigest()


_DIGEST = re.compile(r"(?:sha256:)?([0-9a-f]{64})", re.IGNORECASE)


def parse_digest(text) -> str:
    """A digest given by hand (``sha256:HEX`` or the 64 hexadecimal digits alone, any case,
    surrounding blanks ignored) as ``sha256:`` + lower-case hex; :class:`ParameterError` otherwise."""
    match = _DIGEST.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        shown = repr(text) if not isinstance(text, str) or len(text) <= 80 else repr(text[:77] + "...")
        raise ParameterError(f"a digest is 'sha256:' followed by 64 hexadecimal digits, got {shown}")
    return "sha256:" + match.group(1).lower()


class GuaranteeError(SpecificationError):
    """A well-formed, self-consistent specification that fails verification: its digest differs
    from the expected one, or a cell fails with probability above the stated risk.

    ``problems`` lists every finding (the message joins them); ``digest`` is the specification's
    own digest."""

    def __init__(self, problems, digest: str):
        self.problems = tuple(problems)
        self.digest = digest
        super().__init__("; ".join(self.problems))


def key_labels(labels, keys) -> dict | None:
    """The variable and value labels of the ``keys`` (``labels``: the
    :class:`~probanon.labelled.TableLabels` of an SPSS or Stata population, or None) as a
    specification carries them: ``{"columns": {key: text}, "values": {key: [[code, text], ...]}}``
    (either part only when present; None when there is none). A questionnaire asks with them."""
    from ..microagg.mixed import _level

    if labels is None:
        return None
    keys = [str(k) for k in keys]
    columns = {k: str(labels.column_labels[k]) for k in keys if labels.column_labels.get(k)}
    values = {k: [[_level(code), str(text)] for code, text in labels.value_labels[k].items()]
              for k in keys if labels.value_labels.get(k)}
    out = {**({"columns": columns} if columns else {}), **({"values": values} if values else {})}
    return out or None


def _check_labels(spec: dict, function) -> None:
    """A specification's optional ``labels`` (:func:`key_labels`), of its keys only."""
    if "labels" not in spec:
        return
    labels, keys = spec["labels"], set(function.columns or ())
    ok = isinstance(labels, dict) and set(labels) <= {"columns", "values"}
    columns, values = (labels.get("columns", {}), labels.get("values", {})) if ok else ({}, {})
    ok = ok and isinstance(columns, dict) and isinstance(values, dict) and set(columns) | set(values) <= keys \
        and all(isinstance(t, str) for t in columns.values()) \
        and all(isinstance(pairs, list) and all(isinstance(p, list) and len(p) == 2 and isinstance(p[1], str)
                                                 and isinstance(p[0], (str, int, float)) for p in pairs)
                for pairs in values.values())
    if not ok:
        raise SpecificationError("specification: malformed 'labels' (variable and value labels of the keys)")


def build_spec(d: SurveyDesign, participation_column: str | None = None, labels=None) -> dict:
    """The publishable specification of a design, digest included (``participation_column``
    names the population column of a per-record design, for simulations; ``labels``: the
    population's SPSS/Stata labels, whose labels of the keys the specification carries,
    :func:`key_labels`)."""
    if d.participation is not None:
        model = {"model": "constant", "pi": d.participation}
    else:
        model = {"model": "per-record"}
        if participation_column is not None:
            model["column"] = participation_column
    if d.participation_model is not None:  # a fitted model: the cells carry their pi_j as per-record
        model = dict(d.participation_model)
    cells = [{"size": int(size), "failure": float(failure)} for size, failure in zip(d.sizes, d.cell_failures)]
    if d.participation is None:  # each cell's pi_j, sorted
        by_cell = d.record_participation[np.lexsort((d.record_participation, d.labels))]
        for cell, values in zip(cells, np.split(by_cell, np.cumsum(d.sizes)[:-1])):
            cell["participation"] = values.tolist()
    spec = {
        "probanon_survey_spec": VERSION,
        "guarantee": {"k": d.k, "risk": d.risk, "participation": model, "n_min": d.n_min,
                      "cell_size": d.cell_size, "records": int(d.labels.size)},
        "function": d.function.to_dict(),
        "cells": cells,
        "distortion": d.distortion,
    }
    carried = key_labels(labels, d.function.columns or ())
    if carried is not None:
        spec["labels"] = carried
    spec["digest"] = digest(spec)
    return spec


@dataclass(frozen=True)
class VerifiedSpec:
    """A specification that passed :func:`verify`."""

    spec: dict
    function: MicroaggregationFunction
    digest_confirmed: bool = False  # True when compared with an expected (out-of-band) digest

    @property
    def guarantee(self) -> dict:
        return self.spec["guarantee"]

    @property
    def digest(self) -> str:
        """The whole digest, ``sha256:`` and 64 hexadecimal digits."""
        return self.spec["digest"]


def load_spec(text_or_path) -> dict:
    spec = read_json_document(text_or_path, "specification")
    if not isinstance(spec, dict) or type(spec.get("probanon_survey_spec")) is not int:
        raise SpecificationError("not a probanon survey specification")
    if spec["probanon_survey_spec"] != VERSION:
        raise SpecificationError(f"unsupported specification version {spec['probanon_survey_spec']}")
    return spec


def _field(d: dict, key: str, where: str):
    if not isinstance(d, dict) or key not in d:
        raise SpecificationError(f"specification: missing {where}{key!r}")
    return d[key]


def verify(spec_or_path, expected_digest=None) -> VerifiedSpec:
    """Check a specification as a respondent would: its digest, its guarantee, and every cell's
    failure recomputed by Algorithm A from its declared size.

    ``expected_digest``: the digest published through a second channel (``sha256:HEX`` or the
    hex alone, any case); without it the digest only shows that the document is internally
    intact, not that it is the collector's (see the module docstring). Raises
    :class:`SpecificationError` when the specification cannot be checked (malformed, altered
    after its digest was computed, self-contradictory) and :class:`GuaranteeError` (a subclass)
    when it is well-formed but is not the expected document or its guarantee does not hold."""
    expected = None if expected_digest is None else parse_digest(expected_digest)
    spec = spec_or_path if isinstance(spec_or_path, dict) else load_spec(spec_or_path)
    declared = spec.get("digest")
    if not isinstance(declared, str):
        raise SpecificationError("specification has no digest")
    try:
        actual = digest(spec)
    except ValueError:
        raise SpecificationError("specification contains NaN or infinity") from None
    if declared != actual:
        raise SpecificationError("digest mismatch: the specification was altered after it was published")
    try:
        function, failing = _check_guarantee(spec)
        _check_labels(spec, function)
    except SpecificationError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError) as exc:  # includes ParameterError
        raise SpecificationError(f"specification: malformed value ({str(exc).splitlines()[0]})") from None
    problems = []
    if expected is not None and actual != expected:
        problems.append(f"its digest {actual} differs from the expected {expected}: "
                        "this is not the specification that was published")
    problems.extend(failing)
    if problems:
        raise GuaranteeError(problems, digest=actual)
    return VerifiedSpec(spec=spec, function=function, digest_confirmed=expected is not None)


def _integer(value, what: str) -> int:
    if type(value) is not int:
        raise SpecificationError(f"specification: {what} must be an integer, got {value!r}")
    return value


def _check_guarantee(spec: dict) -> tuple[MicroaggregationFunction, list[str]]:
    """The function and the cells whose recomputed failure exceeds the risk; any malformed or
    self-contradictory field raises :class:`SpecificationError` first."""
    g = _field(spec, "guarantee", "")
    k = _integer(_field(g, "k", "guarantee "), "k")
    risk = check_risk(_field(g, "risk", "guarantee "))
    model = _field(g, "participation", "guarantee ")
    kind = _field(model, "model", "participation ")
    records = _integer(_field(g, "records", "guarantee "), "records")
    if not 1 <= records <= MAX_RECORDS:
        raise SpecificationError(f"specification: {records} records is out of range (1..{MAX_RECORDS})")
    if not 1 <= k <= records:
        raise SpecificationError(f"specification: k must be between 1 and the {records} records, got {k}")
    cells = _field(spec, "cells", "")
    function = function_from_json(json.dumps(_field(spec, "function", "")))
    if not isinstance(cells, list) or len(cells) != len(function.sizes):
        raise SpecificationError("specification: the cells do not match the function's cells")
    sizes = [_integer(_field(c, "size", f"cell {i} "), f"cell {i} size") for i, c in enumerate(cells)]
    if sizes != [int(s) for s in function.sizes]:
        raise SpecificationError("specification: declared cell sizes differ from the function's")
    if sum(sizes) != records or min(sizes) < 1:
        raise SpecificationError(f"specification: the cell sizes add up to {sum(sizes)}, not to the {records} records declared")
    if kind == "constant":
        pi = check_participation(_field(model, "pi", "participation "))
        n_min = effective_anonymity(k, pi, risk).n
        if _field(g, "n_min", "guarantee ") != n_min:
            raise SpecificationError(f"specification: n_min is {n_min} for this guarantee, not {g['n_min']}")
    elif kind == "logistic":
        check_model_spec(model)
    elif kind != "per-record":
        raise SpecificationError(f"specification: unknown participation model {kind!r}")
    stated = [_field(c, "failure", f"cell {i} ") for i, c in enumerate(cells)]
    for i, value in enumerate(stated):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SpecificationError(f"cell {i}: failure must be a number, got {value!r}")
    if kind == "constant":  # one Algorithm A run per distinct size
        distinct, which = np.unique(sizes, return_inverse=True)
        recomputed = np.array([cell_failure(int(n), k, pi).cell_failure for n in distinct])[which]
    else:  # every cell's pi_j in one array, one kernel call
        lists = [_field(c, "participation", f"cell {i} ") for i, c in enumerate(cells)]
        for i, (values, size) in enumerate(zip(lists, sizes)):
            count = len(values) if isinstance(values, list) else -1
            if count != size:
                raise SpecificationError(f"cell {i}: {count if count >= 0 else 'no list of'} participation values "
                                         f"for {size} records")
        pis = check_participations(list(itertools.chain.from_iterable(lists)))
        recomputed = np.exp(cells_log_failure(k, pis, sizes))
    stated = np.asarray(stated, dtype=np.float64)
    off = ~np.isclose(recomputed, stated, rtol=TOLERANCE, atol=1e-300)
    if off.any():
        i = int(np.argmax(off))
        raise SpecificationError(f"cell {i}: declared failure {stated[i]:.6g} but {sizes[i]} records give "
                                 f"{recomputed[i]:.6g}")
    failing = np.flatnonzero(recomputed > risk).tolist()
    problems = []
    if failing:
        worst = max(failing, key=lambda i: cells[i]["failure"])
        more = f" ({len(failing)} of {len(cells)} cells exceed it)" if len(failing) > 1 else ""
        problems.append(f"the guarantee does not hold: cell {worst} of {sizes[worst]} records fails with "
                        f"probability {cells[worst]['failure']:.6g} > the stated risk {risk}{more}")
    return function, problems


def assign(spec_or_verified, records) -> tuple[np.ndarray, np.ndarray]:
    """(cell, centroid) of each respondent record (original units), after verification."""
    verified = spec_or_verified if isinstance(spec_or_verified, VerifiedSpec) else verify(spec_or_verified)
    cells = verified.function.assign(records)
    return cells, np.asarray(verified.function.centroids)[cells]
