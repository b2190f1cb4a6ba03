"""The registry of published rules (probanon.microagg.rules, issue 41.3): one class per kind the
function's JSON documents, every kind a fit writes (nested ones included) read back to the same
rule by its class, an unknown kind refused in one line."""

import json

import numpy as np
import pandas as pd
import pytest

from probanon.errors import SpecificationError
from probanon.microagg import MDAV, VMDAV, IndividualRanking, function_from_json
from probanon.microagg.rules import RULES, rule_class, rule_of
from probanon.survey.design import design

#: the kinds the function format documents (probanon/microagg/function.py, README)
DOCUMENTED = {"ordered-balls", "power-diagram", "intervals", "blocked", "decision-tree", "stratified"}


@pytest.fixture(scope="module")
def written():
    """The JSON of a function of every kind, as fits write it: {name: document}."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(240, 2))
    frame = pd.DataFrame(X, columns=["a", "b"])
    strata = pd.Series(np.where(X[:, 0] > 0, "p", "q"), name="s")
    fits = {
        "balls": MDAV(4, keep_duplicates=True).fit(X).function_,
        "power": VMDAV(4).fit(X).function_,
        "intervals": IndividualRanking(4).fit(X).function_,
        "blocked": VMDAV(4, block_size=60).fit(X).function_,
        "stratified": MDAV(4, keep_duplicates=True, block_size=80).fit(frame, strata=strata).function_,
        "tree": design(X, 4, 1.0, 0.5, method="tree").function,
    }
    return {name: json.loads(f.to_json()) for name, f in fits.items()}


def kinds_in(rule_kind: str, rule: dict) -> set:
    """The kind of a JSON rule and of the rules nested in it."""
    nested = [(n["kind"], n["rule"]) for n in rule.get("nodes", []) if "kind" in n] + \
        [(s["kind"], s["rule"]) for s in rule.get("strata", [])]
    return {rule_kind}.union(*(kinds_in(k, r) for k, r in nested))


def test_the_registry_holds_one_class_per_documented_kind(written):
    assert set(RULES) == DOCUMENTED
    assert all(cls.kind == kind for kind, cls in RULES.items())
    seen = set().union(*(kinds_in(d["kind"], d["rule"]) for d in written.values()))
    assert seen == DOCUMENTED  # the fits above write every kind, the blocked and stratified ones nested too


def test_each_class_reads_its_rule_back_to_the_same_json(written):
    for name, d in written.items():
        width = len(d["standardization"]["mean"])
        back = function_from_json(json.dumps(d))
        assert type(back.rule) is RULES[d["kind"]], name
        assert json.loads(back.to_json()) == d, name
        rule = RULES[d["kind"]].from_dict(d["rule"], width, encoding=back.encoding)
        assert rule.to_dict() == d["rule"], name
        # a cell per size; intervals: a cell per combination of the columns' groups
        cells = np.prod([len(s) for s in d["sizes"]]) if d["kind"] == "intervals" else len(d["sizes"])
        assert rule.n_cells == back.n_cells == cells, name


def test_an_unknown_kind_is_refused_in_one_line():
    for kind in ("hexagons", None, ["blocked"]):
        with pytest.raises(SpecificationError, match=r"^function: unknown kind .*$"):
            rule_class(kind)
    with pytest.raises(SpecificationError, match="^function: unknown kind 'hexagons'$"):
        rule_of("hexagons", {})
