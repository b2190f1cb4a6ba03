"""Issue 42, point 4: the attack suite on releases of every kind -- categorical and mixed keys (the
release's own encoding), strata, missing values by pattern, weights -- through the library and
'probanon attack'.

The expected success of the exact-tuple and nearest-record intruders is computed here without
probanon.attacks: tuples of values matched with pandas, distances by brute force in NumPy (numbers
z-scored with the original's mean and population sd, a nominal key 1 when the categories differ),
the candidate rule of missing values and strata written out target by target. Both intruders pick
uniformly among their candidates, so the mean of many runs is compared with that expectation
within 4 binomial standard errors."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from helpers import SHARED_DATA

from probanon.attacks import attack
from probanon.cli import main
from probanon.errors import AdjustmentWarning, InputError
from probanon.microagg import MDAV

ADULT = SHARED_DATA / "adult" / "adult.csv"
NUMERIC = ["age", "education-num", "hours-per-week"]
NOMINAL = ["sex", "race"]
KEYS = NUMERIC + NOMINAL
CONF = ["capital-gain", "capital-loss", "occupation"]
K, RUNS = 5, 60


@pytest.fixture(scope="module")
def adult(shared_data):
    frame = pd.read_csv(ADULT, usecols=KEYS + CONF + ["income", "fnlwgt"])
    return frame.sample(500, random_state=42).reset_index(drop=True)


def _release(frame, *, strata=None, missing="raise", weights=None):
    """MDAV at k = 5 with sex, race nominal (record order kept: released row i is record i)."""
    model = MDAV(K, nominal=NOMINAL, missing=missing).set_output(transform="default")
    with warnings.catch_warnings():  # the patterns merged and values suppressed: what the tests look at
        warnings.simplefilter("ignore", AdjustmentWarning)
        Y = model.fit_transform(frame[KEYS], strata=None if strata is None else frame[[strata]],
                                sample_weight=None if weights is None else frame[weights].to_numpy(float))
    return frame.assign(**{c: Y[:, j] for j, c in enumerate(KEYS)})


def _codes(frame, released):
    """The key tuples of both tables as values comparable with ==: numbers as floats, categories
    as text, a missing value as the marker "NA"."""
    def one(table):
        out = pd.DataFrame({c: pd.to_numeric(table[c]).astype(float) for c in NUMERIC})
        for c in NOMINAL:
            out[c] = table[c].astype(object)
        return out.astype(object).where(out.notna(), "NA")
    return one(frame), one(released)


def _expected_exact(frame, released, strata=None):
    """Mean over targets of 1/#rows holding the target's tuple (stratum included) when its own
    released row is one of them, else 0."""
    x, y = _codes(frame, released)
    cols = KEYS + ([strata] if strata else [])
    if strata:
        x[strata], y[strata] = frame[strata].to_numpy(), released[strata].to_numpy()
    tx = list(map(tuple, x[cols].to_numpy()))
    ty = list(map(tuple, y[cols].to_numpy()))
    count = pd.Series(ty).value_counts().to_dict()
    p = [1.0 / count[t] if t == ty[i] else 0.0 for i, t in enumerate(tx)]
    return float(np.mean(p)), sum(t in count for t in tx)


def _embed(frame, reference):
    """Numbers z-scored with ``reference``'s mean and population sd; each nominal key as its
    category indicators times 1/sqrt(2) (distance 1 between categories); NaN where missing."""
    parts = []
    for c in NUMERIC:
        ref = pd.to_numeric(reference[c]).astype(float)
        parts.append(((pd.to_numeric(frame[c]).astype(float) - ref.mean()) / ref.std(ddof=0)).to_numpy()[:, None])
    for c in NOMINAL:
        cats = sorted(reference[c].dropna().unique())
        ind = np.column_stack([(frame[c] == v).to_numpy(float) for v in cats]) / np.sqrt(2)
        ind[frame[c].isna().to_numpy()] = np.nan
        parts.append(ind)
    return np.hstack(parts), np.repeat(np.arange(len(KEYS)), [1] * len(NUMERIC) + [
        len(reference[c].dropna().unique()) for c in NOMINAL])


def _expected_nearest(frame, released, strata=None):
    """Target by target: the released rows it may be (its stratum; lacking at least the keys it
    lacks, the fewest more), the nearest of them on the keys observed in both; the chance that a
    uniform pick among the rows at the minimal distance is its own."""
    X, key_of = _embed(frame, frame)
    Y, _ = _embed(released, frame)
    lack_x = frame[KEYS].isna().to_numpy()
    lack_y = released[KEYS].isna().to_numpy()
    p = np.zeros(len(frame))
    for i in range(len(frame)):
        ok = (lack_y | ~lack_x[i]).all(axis=1)
        if strata:
            ok &= (released[strata] == frame[strata].iloc[i]).to_numpy()
        extra = (lack_y & ~lack_x[i]).sum(axis=1)
        ok &= extra == extra[ok].min()
        rows = np.flatnonzero(ok)
        d = np.array([np.sqrt(np.sum((X[i, ~lack_y[r][key_of]] - Y[r, ~lack_y[r][key_of]]) ** 2)) for r in rows])
        best = rows[d <= d.min() + 1e-9 * max(1.0, d.min())]
        p[i] = 1.0 / best.size if i in best else 0.0
    return float(p.mean())


def _close(rate, expected, n):
    se = np.sqrt(max(expected * (1 - expected), 1e-4) / (n * RUNS))
    assert abs(rate - expected) <= 4 * se, (rate, expected)


def _rates(frame, released, **kwargs):
    report = attack(frame, released, KEYS, CONF, mechanism="microaggregation", k=K, intruders=["exact", "nearest"],
                    runs=RUNS, random_state=1, nominal=NOMINAL, **kwargs)
    return report, {r.rule: r for r in report.results}


def _groups(released, strata=None):
    x = _codes(released, released)[0]
    if strata:
        x[strata] = released[strata].to_numpy()
    return len(x.drop_duplicates())


def test_nominal_release_every_intruder_runs_rates_as_computed_independently(adult):
    released = _release(adult)
    report, by = _rates(adult, released)
    exact, found = _expected_exact(adult, released)
    _close(by["exact tuple"].rate, exact, len(adult))
    assert f"{found:,} of {len(adult):,} targets" in by["exact tuple"].note
    _close(by["nearest record"].rate, _expected_nearest(adult, released), len(adult))
    assert report.groups_note.startswith(f"{_groups(released):,} groups of identical released key tuples")
    full = attack(adult, released, KEYS, CONF, mechanism="microaggregation", k=K, runs=2, random_state=1,
                  nominal=NOMINAL, ordinal=[])
    rules = {r.rule: r for r in full.results}
    assert set(rules) == {"exact tuple", "nearest record", "learned likelihood", "deterministic relation"}
    assert "left out sex, race, occupation (not numeric)" in rules["deterministic relation"].note
    assert all(0 <= r.rate <= 1 for r in full.results)


def test_undeclared_text_key_names_the_option(adult):
    with pytest.raises(InputError, match="name it nominal or ordinal"):
        attack(adult, adult, KEYS, (), mechanism="microaggregation", k=K, runs=1)


def test_strata_release_groups_within_strata(adult):
    released = _release(adult, strata="income")
    report, by = _rates(adult, released, strata=["income"])
    _close(by["exact tuple"].rate, _expected_exact(adult, released, "income")[0], len(adult))
    _close(by["nearest record"].rate, _expected_nearest(adult, released, "income"), len(adult))
    assert report.groups_note.startswith(f"{_groups(released, 'income'):,} groups of identical released key tuples "
                                         "within strata")


def test_merged_strata_are_understood(adult):
    """A stratum of fewer than k records merged into its neighbour is released under the joined
    label ("tiny+young"): the intruder puts the targets of either stratum in it."""
    frame = adult.assign(band=np.where(adult["age"] < 30, "young", "old"))
    frame.loc[frame.index[:3], "band"] = "tiny"
    joined = frame["band"].replace({"tiny": "tiny+young", "young": "tiny+young"})
    released = _release(frame.assign(band=joined), strata="band")  # as --merge-small-strata releases it
    assert (released["band"] == "tiny+young").sum() > 3
    _, by = _rates(frame, released, strata=["band"])
    _close(by["nearest record"].rate, _expected_nearest(frame.assign(band=joined), released, "band"), len(frame))
    with pytest.raises(InputError, match="stratum"):
        _rates(frame.assign(band=frame["band"].replace({"tiny": "none"})), released, strata=["band"])


def test_missing_pattern_release(adult):
    frame = adult.copy()
    rng = np.random.default_rng(7)
    frame.loc[rng.random(len(frame)) < 0.15, "hours-per-week"] = np.nan
    frame.loc[rng.random(len(frame)) < 0.06, "race"] = np.nan
    frame.loc[frame.index[:2], "age"] = np.nan  # a pattern of 2 records: merged, values suppressed in its groups
    released = _release(frame, missing="pattern")
    assert (released[KEYS].isna().sum() > frame[KEYS].isna().sum()).any()
    report, by = _rates(frame, released, missing="pattern")
    _close(by["exact tuple"].rate, _expected_exact(frame, released)[0], len(frame))
    _close(by["nearest record"].rate, _expected_nearest(frame, released), len(frame))
    assert report.groups_note.startswith(f"{_groups(released):,} groups")
    full = attack(frame, released, KEYS, CONF, mechanism="microaggregation", k=K, runs=2, random_state=1,
                  nominal=NOMINAL, missing="pattern")
    relation = next(r for r in full.results if r.rule == "deterministic relation")
    assert "hours-per-week (missing values)" in relation.note
    with pytest.raises(InputError):  # without the option the missing values are refused
        attack(frame, released, KEYS, CONF, mechanism="microaggregation", k=K, runs=1, nominal=NOMINAL)


def test_weight_column_is_attached_to_a_person():
    """A weight released unchanged that is a function of the keys (w = x1 + x2, distinct) links
    every person to their row through the relation intruder, although the keys are aggregated:
    each target's x1 + x2 is the weight of its own row only, so the success is 1 (the share of
    targets whose sum no other row's weight equals, counted here). The report lists the weight
    among the released columns; without it the relation intruder has no column to learn from."""
    rng = np.random.default_rng(3)
    x = np.column_stack([rng.permutation(300) * 1000.0, rng.integers(0, 1000, size=300)]).astype(float)
    frame = pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "w": x.sum(axis=1)})
    Y = MDAV(3).fit_transform(x, sample_weight=frame["w"].to_numpy() + 1.0)
    released = frame.assign(x1=Y[:, 0], x2=Y[:, 1])
    report = attack(frame, released, ["x1", "x2"], (), mechanism="microaggregation", k=3, runs=3, random_state=2,
                    weights="w", intruders=["relations"])
    assert report.confidential == ["w"]
    u = (frame["x1"] + frame["x2"]).to_numpy()
    expected = np.mean([np.flatnonzero(frame["w"].to_numpy() == v).tolist() == [i] for i, v in enumerate(u)])
    result = report.results[0]
    assert expected == 1.0 and result.rate == expected
    assert result.lower_exceeds_bound and "x1 + x2 = w" in result.note
    nearest = attack(frame, released, ["x1", "x2"], (), mechanism="microaggregation", k=3, runs=3, random_state=2,
                     intruders=["nearest"]).results[0]
    assert nearest.rate <= 1 / 3 + 1e-12  # by the keys alone: within the groups of 3


# ------------------------------------------------------------------------------------------ CLI

def _run(argv, capsys):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_attack_on_a_nominal_release(tmp_path, capsys, adult):
    """'probanon microaggregate --nominal sex,race -k 5 --link', then 'probanon attack' with the
    same options: the exact intruder's rate as computed on the rows the link file gives."""
    source, out, link = tmp_path / "adult.csv", tmp_path / "k5.csv", tmp_path / "k5.link.csv"
    adult.drop(columns="fnlwgt").to_csv(source, index=False)
    code, _, err = _run(["microaggregate", source, "-o", out, "-k", K, "--keys", ",".join(NUMERIC), "--nominal",
                         ",".join(NOMINAL), "--confidential", ",".join(CONF + ["income"]), "--link", link,
                         "--seed", 3, "--quiet"], capsys)
    assert code == 0, err
    code, stdout, err = _run(["attack", source, out, "--mechanism", "microaggregation", "-k", K, "--keys",
                              ",".join(NUMERIC), "--nominal", ",".join(NOMINAL), "--confidential",
                              ",".join(CONF + ["income"]), "--link", link, "--seed", 1, "--runs", RUNS,
                              "--intruders", "exact,nearest", "--json", "--quiet"], capsys)
    assert code in (0, 1), err
    doc = json.loads(stdout)
    assert doc["keys"] == KEYS
    rows = pd.read_csv(link).sort_values("original_row")["released_row"].to_numpy() - 1
    aligned = pd.read_csv(out).iloc[rows].reset_index(drop=True)
    rates = {r["rule"]: r["rate"] for r in doc["results"]}
    _close(rates["exact tuple"], _expected_exact(adult, aligned)[0], len(adult))
    _close(rates["nearest record"], _expected_nearest(adult, aligned), len(adult))
    # without --nominal: one line, naming the option
    code, stdout, err = _run(["attack", source, out, "--mechanism", "microaggregation", "-k", K, "--keys",
                              ",".join(KEYS), "--link", link, "--quiet"], capsys)
    assert code == 2 and stdout == "" and "--nominal" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("options", [["--strata", "income"], ["--missing", "pattern"], ["--weights", "fnlwgt"]])
def test_cli_attack_on_strata_missing_and_weighted_releases(tmp_path, capsys, adult, options):
    frame = adult.copy()
    if options[0] == "--missing":
        frame.loc[np.random.default_rng(5).random(len(frame)) < 0.1, "hours-per-week"] = np.nan
    conf = CONF + (["income"] if options[0] != "--strata" else [])
    drop = ["fnlwgt"] if options[0] != "--weights" else []
    frame = frame.drop(columns=drop)
    source, out, link = tmp_path / "adult.csv", tmp_path / "k5.csv", tmp_path / "k5.link.csv"
    frame.to_csv(source, index=False)
    code, _, err = _run(["microaggregate", source, "-o", out, "-k", K, "--keys", ",".join(NUMERIC), "--nominal",
                         ",".join(NOMINAL), "--confidential", ",".join(conf), "--link", link, "--seed", 3, "--quiet",
                         *options], capsys)
    assert code == 0, err
    code, stdout, err = _run(["attack", source, out, "--mechanism", "microaggregation", "-k", K, "--keys",
                              ",".join(NUMERIC), "--nominal", ",".join(NOMINAL), "--confidential", ",".join(conf),
                              "--link", link, "--seed", 1, "--runs", RUNS, "--json", "--quiet", *options], capsys)
    assert code in (0, 1), err
    doc = json.loads(stdout)
    rows = pd.read_csv(link).sort_values("original_row")["released_row"].to_numpy() - 1
    aligned = pd.read_csv(out).iloc[rows].reset_index(drop=True)
    strata = "income" if options[0] == "--strata" else None
    rates = {r["rule"]: r["rate"] for r in doc["results"]}
    _close(rates["nearest record"], _expected_nearest(frame, aligned, strata), len(frame))
    assert len(rates) == 4
    if options[0] == "--weights":
        assert "fnlwgt" in doc["confidential"]


def test_mdav_swap_with_strata_groups_rebuilt_within_strata():
    """'swap --strata': each stratum grouped as a file of its own; the intruder reruns MDAV within
    each released stratum and finds the swap's own groups; the exact intruder's rate is that of the
    tuples left in place (computed here on the swap's permutation)."""
    from probanon.swapping import swap

    rng = np.random.default_rng(8)
    frame = pd.DataFrame(rng.lognormal(2.0, 1.0, size=(240, 3)), columns=["x1", "x2", "c1"])
    frame["region"] = np.where(rng.random(240) < 0.4, "north", "south")
    result = swap(frame[["x1", "x2", "c1"]], 4, "mdav-swap", confidential=["c1"], random_state=9,
                  strata=frame[["region"]])
    released = result.released.assign(region=frame["region"].to_numpy())  # row i: record i's c1, another's keys
    report = attack(frame, released, ["x1", "x2"], ["c1"], mechanism="mdav-swap", k=4, intruders=["exact"],
                    runs=RUNS, random_state=3, strata=["region"])
    n_groups = int(result.groups.labels[:, 0].max()) + 1
    assert report.groups_note.startswith(f"{n_groups:,} MDAV groups (k = 4) rebuilt from the released keys within strata")
    holder = {tuple(v): i for i, v in enumerate(released[["x1", "x2"]].to_numpy())}  # tuples distinct
    expected = np.mean([holder[tuple(v)] == i for i, v in enumerate(frame[["x1", "x2"]].to_numpy())])
    _close(report.results[0].rate, expected, 240)


@pytest.mark.parametrize("mechanism", ["ir-swap", "mdav-swap-informed"])
def test_column_wise_swaps_with_strata(mechanism):
    """'swap --strata' of a column-wise mechanism: keys released unchanged, so the exact intruder
    finds each person's own row and succeeds on column c exactly when c's value was not moved
    (counted here on the swap's value rows); the groups are formed within strata."""
    from probanon.swapping import swap

    rng = np.random.default_rng(10)
    frame = pd.DataFrame(rng.lognormal(2.0, 1.0, size=(200, 4)), columns=["x1", "x2", "c1", "c2"])
    frame["region"] = np.where(rng.random(200) < 0.3, "north", "south")
    result = swap(frame[["x1", "x2", "c1", "c2"]], 4, mechanism, confidential=["c1", "c2"], random_state=11,
                  strata=frame[["region"]])
    released = result.released.assign(region=frame["region"].to_numpy())
    rows = {}
    for t, c in enumerate(["c1", "c2"]):
        rows[c] = np.empty(200, dtype=np.int64)
        rows[c][result.sources[:, t]] = np.arange(200)  # released row holding record i's value of c
    report = attack(frame, released, ["x1", "x2"], ["c1", "c2"], mechanism=mechanism, k=4, column_rows=rows,
                    intruders=["exact", "nearest"], runs=3, random_state=3, strata=["region"])
    expected = np.mean([rows[c] == np.arange(200) for c in ("c1", "c2")])
    assert all(r.rate == pytest.approx(expected) for r in report.results)
    assert "within strata" in report.groups_note
    # the groups the intruder rebuilt are the swap's own, as partitions of the released rows
    from probanon.attacks.setting import column_data

    for t, c in enumerate(["c1", "c2"]):
        data = column_data(frame, released, ["x1", "x2"], c, rows[c], mechanism, 4, True, ["c1", "c2"], ["region"])
        theirs = result.groups.labels[result.sources[:, t], t]  # group of the record whose value row r holds
        pairs = set(zip(data.row_group.tolist(), theirs.tolist()))
        assert len(pairs) == len(set(data.row_group.tolist())) == len(set(theirs.tolist()))


def test_ordinal_key_compared_by_rank(adult):
    """race declared ordinal (levels in text order): the release holds each group's lower median
    level; the nearest-record intruder compares z-scored ranks (the rank's mean and population sd
    on the original), computed here by brute force."""
    frame = adult.copy()
    model = MDAV(K, nominal=["sex"], ordinal=["race"]).set_output(transform="default")
    Y = model.fit_transform(frame[KEYS])
    released = frame.assign(**{c: Y[:, j] for j, c in enumerate(KEYS)})
    levels = sorted(frame["race"].unique())

    def embed(table):
        parts = [((table[c].astype(float) - frame[c].mean()) / frame[c].std(ddof=0)).to_numpy() for c in NUMERIC]
        rank, ref = table["race"].map(levels.index).astype(float), frame["race"].map(levels.index).astype(float)
        parts.append(((rank - ref.mean()) / ref.std(ddof=0)).to_numpy())
        parts += [(table["sex"] == v).to_numpy(float) / np.sqrt(2) for v in sorted(frame["sex"].unique())]
        return np.column_stack(parts)

    X, Z = embed(frame), embed(released)
    d = np.sqrt(((X[:, None, :] - Z[None, :, :]) ** 2).sum(axis=2))
    best = d <= d.min(axis=1, keepdims=True) + 1e-9
    expected = float(np.mean(np.where(best[np.arange(len(frame)), np.arange(len(frame))], 1.0 / best.sum(axis=1), 0)))
    report = attack(frame, released, KEYS, CONF, mechanism="microaggregation", k=K, intruders=["nearest"],
                    runs=RUNS, random_state=1, nominal=["sex"], ordinal=["race"])
    _close(report.results[0].rate, expected, len(frame))
    assert "race compared by z-scored rank" in report.groups_note
