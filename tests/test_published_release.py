"""Issue 39.1: a published function reproduces its release, identical records included, and no
release command writes a release below the k its mechanism promises.

Identical key tuples cannot be told apart by any function of the keys, so a method whose fit
splits them cannot publish a function that reproduces its groups. Every method and function
kind is checked on a sample of UCI Adult (3 keys, thousands of repeated tuples) and on a
generated file where almost every record has identical twins: the published rule's cells are
the fit's groups (``function_.assign(X) == labels_``), ``transform(X) == fit_transform(X)``,
and every released combination is shared by at least k records (counted independently with
pandas).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from probanon.cli import main
from probanon.errors import GuaranteeError, NotFittedError
from probanon.microagg import MDAV, PCL, VMDAV, IndividualRanking, function_from_json
from probanon.release import Promise

from helpers import SHARED_DATA

ADULT_KEYS = ["age", "education-num", "hours-per-week"]


@pytest.fixture(scope="module")
def adult():
    frame = pd.read_csv(SHARED_DATA / "adult" / "adult.csv")
    return frame.sample(n=6000, random_state=3).reset_index(drop=True)


def many_twins(n=1200, seed=5) -> pd.DataFrame:
    """Integer keys on a small grid: about 125 distinct tuples for 1,200 records, with
    multiplicities from 1 to dozens (a skewed draw)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 5, n)
    b = np.minimum(rng.geometric(0.35, n), 5)
    c = rng.integers(0, 5, n) * 10
    return pd.DataFrame({"a": a, "b": b, "c": c}).astype(float)


def smallest_class(values) -> int:
    """k achieved of released values, counted by pandas (NaN equal to NaN)."""
    frame = pd.DataFrame(np.asarray(values, dtype=object))
    return int(frame.groupby(list(frame.columns), dropna=False).size().min())


ESTIMATORS = {
    "mdav": lambda k: MDAV(k),
    "vmdav": lambda k: VMDAV(k),
    "pcl": lambda k: PCL(k, random_state=0, kicks=200),
    "mdav-blocked": lambda k: MDAV(k, block_size=4 * k + 400, n_jobs=1),
    "pcl-blocked": lambda k: PCL(k, random_state=0, kicks=100, block_size=4 * k + 400, n_jobs=1),
    "vmdav-blocked": lambda k: VMDAV(k, block_size=4 * k + 400, n_jobs=1),
}


def check_reproduced(model, X, k, fit_kwargs=None, strata=None):
    released = model.fit_transform(X, **(fit_kwargs or {}))
    again = model.transform(X, strata) if strata is not None else model.transform(X)
    labels = model.function_.assign(X, strata=strata) if strata is not None else model.function_.assign(X)
    np.testing.assert_array_equal(labels, model.labels_)
    np.testing.assert_array_equal(np.asarray(again, dtype=object), np.asarray(released, dtype=object))
    groups = pd.Series(model.labels_).value_counts()
    assert groups.min() >= k
    # identical key tuples (within a stratum) never sit in different groups
    keys = pd.DataFrame(np.asarray(X, dtype=object) if not isinstance(X, pd.DataFrame) else X).astype(str)
    if strata is not None:
        keys = pd.concat([keys, strata.astype(str).add_prefix("stratum ")], axis=1)
    per_tuple = pd.Series(model.labels_).groupby([keys[c] for c in keys.columns]).nunique()
    assert per_tuple.max() == 1
    # and JSON does not change a cell
    np.testing.assert_array_equal(function_from_json(model.function_.to_json()).assign(X, strata=strata)
                                  if strata is not None else function_from_json(model.function_.to_json()).assign(X),
                                  labels)
    return released


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("k", [3, 5])
def test_adult_release_is_the_published_function(adult, name, k):
    X = adult[ADULT_KEYS].astype(float)
    model = ESTIMATORS[name](k)
    released = check_reproduced(model, X, k)
    assert smallest_class(released) >= k
    if "blocked" in name:
        assert model.function_.kind == "blocked" and model.n_blocks_ > 1


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_many_twins_release_is_the_published_function(name):
    X = many_twins()
    assert X.duplicated().mean() > 0.85  # the file is mostly repeated tuples
    released = check_reproduced(ESTIMATORS[name](5), X, 5)
    assert smallest_class(released) >= 5


@pytest.mark.parametrize("make", [lambda: MDAV(4), lambda: VMDAV(4), lambda: PCL(4, random_state=1, kicks=100)])
def test_stratified_and_categorical_kinds(adult, make):
    frame = adult[ADULT_KEYS + ["sex", "race"]].copy()
    model = make().set_params(merge_small_strata=True)
    released = check_reproduced(model, frame[ADULT_KEYS].astype(float), 4,
                                {"strata": frame[["sex"]]}, strata=frame[["sex"]])
    assert model.function_.kind == "stratified"
    assert smallest_class(np.column_stack([released, frame["sex"]])) >= 4
    model = make().set_params(nominal=["race"])
    released = check_reproduced(model, frame[["age", "hours-per-week", "race"]], 4)
    assert model.function_.encoding is not None and smallest_class(released) >= 4


def test_individual_ranking_intervals_reproduce_per_column():
    X = many_twins()
    model = IndividualRanking(5)
    released = model.fit_transform(X)
    pd.testing.assert_frame_equal(model.transform(X), released)
    for j in range(X.shape[1]):
        assert smallest_class(released.iloc[:, [j]]) >= 5


def test_classical_mdav_splits_twins_and_says_so(adult):
    X = adult[ADULT_KEYS].astype(float)
    m = MDAV(5, keep_duplicates=False).fit(X)
    assert m.function_ is None and "identical records" in m.unpublished_
    with pytest.raises(NotFittedError, match="split"):
        m.transform(X)
    # the classical partition is still k-anonymous itself
    assert np.bincount(m.labels_).min() >= 5


def test_promise_counts_missing_as_equal_and_refuses():
    data = pd.DataFrame({"a": [1.0, 1.0, np.nan, np.nan, 2.0], "b": ["x", "x", "y", "y", "z"]})
    promise = Promise(2, (("a", "b"),), "test")
    with pytest.raises(GuaranteeError, match="k achieved = 1 .1 records in 1 combinations"):
        promise.check(data)
    promise.check(data.iloc[:4])  # NaN shares its class with NaN
    # counts of two chunks add up like the whole file
    halves = promise.add(promise.counts(data.iloc[:3]), promise.counts(data.iloc[3:4]))
    promise.check_counts(halves)


# ----------------------------------------------------------------------------- the command line


def run(argv, capsys):
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def test_cli_function_then_apply_gives_the_same_release(adult, tmp_path, capsys):
    source = tmp_path / "adult.csv"
    adult.to_csv(source, index=False)
    keys = ",".join(ADULT_KEYS)
    for method in ("mdav", "vmdav", "pcl"):
        released, function, applied = (tmp_path / f"{method}_{x}" for x in ("rel.csv", "f.json", "app.csv"))
        code, err = run(["microaggregate", source, "-o", released, "-k", 5, "--method", method, "--keys", keys,
                         "--keep-other", "--function", function, "--seed", 1, "--keep-order", "--accept-risk"],
                        capsys)
        assert code == 0, err
        code, err = run(["apply", function, source, "-o", applied, "--keep-other", "--keep-order", "--accept-risk"],
                        capsys)
        assert code == 0, err
        a, b = pd.read_csv(released), pd.read_csv(applied)
        pd.testing.assert_frame_equal(a, b.drop(columns="cell"), check_dtype=False)
        assert a.groupby(ADULT_KEYS).size().min() >= 5
        # the same in chunks
        code, err = run(["apply", function, source, "-o", tmp_path / "chunks.csv", "--keep-other", "--keep-order",
                         "--accept-risk", "--chunk-size", 1000, "--quiet", "--force"], capsys)
        assert code == 0, err
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "chunks.csv"), b)


def test_cli_apply_refuses_a_release_below_k(adult, tmp_path, capsys):
    source, few = tmp_path / "adult.csv", tmp_path / "few.csv"
    adult.to_csv(source, index=False)
    adult.iloc[:40].to_csv(few, index=False)
    function = tmp_path / "f.json"
    code, err = run(["microaggregate", source, "-o", tmp_path / "rel.csv", "-k", 5, "--keys", ",".join(ADULT_KEYS),
                     "--keep-other", "--function", function, "--accept-risk"], capsys)
    assert code == 0, err
    for chunk in ([], ["--chunk-size", 15]):
        out = tmp_path / "app.csv"
        code, err = run(["apply", function, few, "-o", out, "--keep-other", "--accept-risk", "--link",
                         tmp_path / "link.csv", *chunk], capsys)
        assert code == 2 and "promises 5-anonymity" in err and "nothing written" in err
        assert not out.exists() and not (tmp_path / "link.csv").exists()


def test_cli_microaggregate_refuses_a_broken_release(adult, tmp_path, capsys, monkeypatch):
    # a method whose release breaks k (a defect) is stopped before anything is written
    from probanon.microagg import base

    real = base.Microaggregator.fit_transform

    def broken(self, X, *args, **kwargs):
        out = np.array(real(self, X, *args, **kwargs), dtype=float)
        out[0] = out[0] + 1000.0  # one record singled out (whole numbers: survives the rounding)
        return out

    monkeypatch.setattr(base.Microaggregator, "fit_transform", broken)
    source, out = tmp_path / "adult.csv", tmp_path / "rel.csv"
    adult.to_csv(source, index=False)
    code, err = run(["microaggregate", source, "-o", out, "-k", 5, "--keys", ",".join(ADULT_KEYS), "--keep-other",
                     "--function", tmp_path / "f.json", "--accept-risk"], capsys)
    assert code == 2 and "k achieved = 1" in err
    assert not out.exists() and not (tmp_path / "f.json").exists()


def test_cli_split_duplicates_publishes_no_function(adult, tmp_path, capsys):
    source = tmp_path / "adult.csv"
    adult.to_csv(source, index=False)
    code, err = run(["microaggregate", source, "-o", tmp_path / "rel.csv", "-k", 5, "--keys", ",".join(ADULT_KEYS),
                     "--keep-other", "--split-duplicates", "--function", tmp_path / "f.json", "--accept-risk"], capsys)
    assert code == 2 and "identical records" in err
    assert not (tmp_path / "rel.csv").exists()
    code, err = run(["microaggregate", source, "-o", tmp_path / "rel.csv", "-k", 5, "--keys", ",".join(ADULT_KEYS),
                     "--keep-other", "--split-duplicates", "--accept-risk"], capsys)
    assert code == 0, err  # the classical release itself is 5-anonymous
    assert pd.read_csv(tmp_path / "rel.csv").groupby(ADULT_KEYS).size().min() >= 5


@pytest.mark.parametrize("make", [lambda: VMDAV(3), lambda: PCL(3, random_state=0, kicks=200)])
def test_published_sites_are_the_released_means(make, adult):
    """A site that is the mean of other records than its cell's, published beside the cell's
    mean and size, gives a record away: (|G| +- 1) c_g - |G| xbar_g is the record the cell lost
    or gained (the review found 18 tarragona records in V-MDAV's JSON). The published sites are
    the released means, and that difference is no record."""
    tarragona = pd.read_csv(SHARED_DATA / "casc" / "tarragona.csv").to_numpy(float)
    sample = adult[ADULT_KEYS].to_numpy(float)[:3000]
    for X in (tarragona, sample):
        model = make().fit(X)
        f = function_from_json(model.function_.to_json())  # only what is published
        sites = f.standardizer.inverse_transform(f.rule.centers)
        means = np.asarray(f.centroids, dtype=float)
        np.testing.assert_allclose(sites, means, rtol=1e-12, atol=1e-9 * np.abs(X).max())
        records = {tuple(np.round(r, 6)) for r in X}
        sizes = np.asarray(f.sizes)
        released = {tuple(np.round(m, 6)) for m in means}  # a cell of identical records releases one
        for delta in (1, -1):
            guesses = ((sizes + delta)[:, None] * sites - sizes[:, None] * means) * delta
            found = {tuple(np.round(g, 6)) for g in guesses} & records
            assert not found - released


def test_old_recipe_naming_keep_duplicates_is_refused(tmp_path, capsys):
    # a recipe resolved before 0.2.0 says keep_duplicates = false (then: classical MDAV); run
    # now it would silently give another release, so it is refused with what replaces it
    source = tmp_path / "census.csv"
    pd.read_csv(SHARED_DATA / "casc" / "census.csv").to_csv(source, index=False)
    recipe = tmp_path / "r.toml"
    recipe.write_text('command = "microaggregate"\ninput = "census.csv"\noutput = "out.csv"\n'
                      'probanon_version = "0.1.0"\n[options]\nk = 5\nkeys = ["AGI", "FEDTAX"]\nkeep_other = true\n'
                      'keep_duplicates = false\n')
    code, err = run(["release", recipe], capsys)
    assert code == 2 and "split_duplicates = true" in err and not (tmp_path / "out.csv").exists()


def test_split_duplicates_is_for_mdav_only(adult, tmp_path, capsys):
    source = tmp_path / "adult.csv"
    adult.to_csv(source, index=False)
    code, err = run(["microaggregate", source, "-o", tmp_path / "rel.csv", "-k", 5, "--method", "vmdav", "--keys",
                     ",".join(ADULT_KEYS), "--keep-other", "--split-duplicates", "--accept-risk"], capsys)
    assert code == 2 and "applies to mdav" in err and not (tmp_path / "rel.csv").exists()
