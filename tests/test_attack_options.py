"""When an intruder is above the bound, 'probanon attack' says what the office can do and measures
each option (issue 39, point 13): a larger k, dropping the confidential columns the intruder learned
from, perturbing them. Every figure must be that of an actual run of the attack on the changed
release: here each is recomputed on a release built independently (pandas, MDAV's public API)."""

import json

import numpy as np
import pandas as pd
import pytest

from probanon.attacks import attack
from probanon.cli import main
from probanon.microagg import MDAV

KEYS, CONFIDENTIAL, K, RUNS, SEED = ["x1", "x2"], ["c1", "c2", "c3"], 3, 3, 4


def _original(related: bool) -> pd.DataFrame:
    """300 records; c1 and c2 two functions of the keys plus a little noise when ``related`` (the
    learned intruder then tells the members of a group apart through either), else every column
    independent."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(300, 2))
    c1 = 3 * x[:, 0] + x[:, 1] + rng.normal(scale=0.3, size=300) if related else rng.normal(size=300)
    c2 = x[:, 0] - 2 * x[:, 1] + rng.normal(scale=0.3, size=300) if related else rng.normal(size=300)
    return pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "c1": c1, "c2": c2, "c3": rng.normal(size=300)})


def _microaggregated(original: pd.DataFrame, k: int) -> pd.DataFrame:
    Y = MDAV(k).fit_transform(original[KEYS].to_numpy(np.float64))
    return original.assign(x1=Y[:, 0], x2=Y[:, 1])


def _rate(original, released, confidential, k=K):
    report = attack(original, released, KEYS, confidential, mechanism="microaggregation", k=k,
                    intruders=["likelihood"], runs=RUNS, random_state=SEED)
    return report.results[0].rate


def _run(tmp_path, capsys, original, released, *extra):
    original.to_csv(tmp_path / "original.csv", index=False)
    released.to_csv(tmp_path / "released.csv", index=False)
    code = main(["attack", str(tmp_path / "original.csv"), str(tmp_path / "released.csv"), "--mechanism",
                 "microaggregation", "-k", str(K), "--keys", ",".join(KEYS), "--confidential", ",".join(CONFIDENTIAL),
                 "--by-position", "--runs", str(RUNS), "--seed", str(SEED), "--quiet", *extra])
    return code, capsys.readouterr().out


@pytest.fixture(scope="module")
def above():
    original = _original(related=True)
    return original, _microaggregated(original, K)


def test_options_are_printed_when_an_intruder_is_above_the_bound(tmp_path, capsys, above):
    code, out = _run(tmp_path, capsys, *above)
    assert code == 1 and "ABOVE the claimed bound: learned likelihood" in out
    text = out[out.index("What the office can do"):]
    for heading in ("a larger k", "drop one confidential column", "perturb them instead"):
        assert heading in text
    assert "learned likelihood run again" in text and f"bound 1/{K} = {1 / K:.4f}" in text


def test_each_option_is_a_rerun_of_the_attack(tmp_path, capsys, above):
    """The JSON's figures equal the learned intruder's success on releases built here: the keys
    microaggregated again at k' (MDAV), the columns dropped, the columns replaced by their mean
    among the records sharing a released key tuple."""
    original, released = above
    code, out = _run(tmp_path, capsys, original, released, "--json")
    options = json.loads(out)["options"]
    assert code == 1 and options["intruders"] == ["learned likelihood"] and options["bound"] == pytest.approx(1 / K)
    kinds = {o["kind"] for o in options["options"]}
    assert kinds == {"larger k", "drop one", "drop", "perturb"}
    groups = released.groupby(KEYS).ngroup().to_numpy()
    for option in options["options"]:
        columns = option["columns"]
        if option["kind"] == "larger k":
            remade = _microaggregated(original, option["k"])
            expected = _rate(original, remade, CONFIDENTIAL, k=option["k"])
        elif option["kind"] == "perturb":
            means = released[columns].groupby(groups).transform("mean")
            expected = _rate(original, released.assign(**{c: means[c] for c in columns}), CONFIDENTIAL)
        else:
            expected = _rate(original, released.drop(columns=columns), [c for c in CONFIDENTIAL if c not in columns])
        assert option["worst_rate"] == pytest.approx(expected, abs=1e-12), option["change"]
        assert option["within_bound"] == (expected <= 1 / K)
    # the larger k are tried in order 2k, 3k, 4k, stopping at the first within the bound
    ks = [o["k"] for o in options["options"] if o["kind"] == "larger k"]
    assert ks == [2 * K, 3 * K, 4 * K][:len(ks)]
    within = [o["within_bound"] for o in options["options"] if o["kind"] == "larger k"]
    assert not any(within[:-1])
    # each column dropped alone; no single one is enough (the intruder learns from c1 and from c2),
    # so the most telling are dropped together, in order, until within the bound
    alone = {o["columns"][0]: o["worst_rate"] for o in options["options"] if o["kind"] == "drop one"}
    assert set(alone) == set(CONFIDENTIAL) and all(rate > 1 / K for rate in alone.values())
    assert max(alone["c1"], alone["c2"]) < alone["c3"]
    together = [o for o in options["options"] if o["kind"] == "drop"]
    assert sorted(together[0]["columns"]) == ["c1", "c2"] and together[-1]["within_bound"]
    chosen = options["options"][options["chosen"]["drop"]]
    assert chosen is together[0]
    perturbed = [o["columns"] for o in options["options"] if o["kind"] == "perturb"]
    assert perturbed == [together[0]["columns"][:m] for m in range(1, len(perturbed) + 1)]


def test_nothing_is_offered_within_the_bound(tmp_path, capsys):
    original = _original(related=False)
    code, out = _run(tmp_path, capsys, original, _microaggregated(original, K))
    assert code == 0 and "What the office can do" not in out and "ABOVE" not in out
    code, out = _run(tmp_path, capsys, original, _microaggregated(original, K), "--json")
    assert code == 0 and "options" not in json.loads(out)


def test_column_wise_options_remake_the_swap():
    """MDAV-SWAP (informed) forms each column's groups on every other attribute: the release without
    a column, or at a larger k, is the swap made again (same seed) -- the figures equal the attack
    on such releases made here with probanon.swapping.swap; nothing is perturbed (no groups)."""
    from probanon.attacks.remedies import remedies
    from probanon.swapping import swap

    original = _original(related=True)

    def swapped(confidential, k):
        result = swap(original[KEYS + confidential], k, "mdav-swap-informed", confidential, random_state=SEED)
        value_rows = result.value_rows()
        rows = {(KEYS + confidential)[cols[0]]: value_rows[:, t] for t, cols in enumerate(result.groups.columns)}
        return original.assign(**{c: result.released[c] for c in confidential}), rows

    released, rows = swapped(CONFIDENTIAL, K)
    settings = dict(mechanism="mdav-swap-informed", runs=RUNS, random_state=SEED)
    report = attack(original, released, KEYS, CONFIDENTIAL, k=K, column_rows=rows, **settings)
    assert report.exceeded == ["learned likelihood"]
    options = remedies(original, released, KEYS, CONFIDENTIAL, report, column_rows=rows, runs=RUNS, random_state=SEED)
    assert {o.kind for o in options.options} == {"larger k", "drop one", "drop"}
    assert any("Perturbing confidential columns: not measured" in note for note in options.notes)
    for option in options.options:
        rest = [c for c in CONFIDENTIAL if c not in option.columns]
        table, value_rows = swapped(rest, option.k)
        expected = attack(original, table, KEYS, rest, k=option.k, column_rows=value_rows,
                          intruders=["likelihood"], **settings).results[0].rate
        assert option.worst == pytest.approx(expected, abs=1e-12), option.change
