"""Issue 42.2: microaggregation whose groups are t-close / l-diverse on declared sensitive columns
(probanon.diversity.microaggregation; Soria-Comas, Domingo-Ferrer, Sanchez, Martinez, "t-Closeness
through microaggregation", IEEE TKDE 27(11) 2015) and ``probanon microaggregate --t-closeness /
--l-diversity``.

Every released group is checked here by computations written in this file, not by the library's:

* ordered EMD (Li et al. 2007), values v_1 < ... < v_m of the whole file at distance |i-j|/(m-1):
  ``EMD(P_c, P) = (1/(m-1)) sum_i |sum_{j<=i} (P_c(v_j) - P(v_j))|`` from the cumulative
  distributions; cross-checked against scipy.stats.wasserstein_distance on the value ranks
  (0..m-1) divided by m-1 (the largest rank distance), the same quantity;
* equal-distance EMD (categories): ``(1/2) sum_s |P_c(s) - P(s)|``;
* distinct l: the values of a group counted with a set; entropy l: -sum p ln p from the counts.
"""

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wasserstein_distance

from helpers import DATA
from probanon.cli import main
from probanon.diversity.microaggregation import SensitiveMicroaggregation, t_closeness_first_size
from probanon.errors import InputError, ParameterError
from probanon.microagg import MDAV, function_from_json

KEYS = ["AFNLWGT", "AGI", "EMCONTRB", "FEDTAX", "STATETAX"]


@pytest.fixture(scope="module")
def census():
    return pd.read_csv(DATA / "census.csv")


def ordered_emd(group, whole) -> float:
    values = np.unique(whole)
    m = values.size
    if m == 1:
        return 0.0
    p = np.array([np.mean(whole == v) for v in values])
    pc = np.array([np.mean(group == v) for v in values])
    return float(np.abs(np.cumsum(pc - p)).sum() / (m - 1))


def equal_emd(group, whole) -> float:
    values = sorted(set(whole))
    return 0.5 * sum(abs(np.mean(group == v) - np.mean(whole == v)) for v in values)


def entropy(group) -> float:
    _, counts = np.unique(group, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())


def groups_of(labels):
    return [np.flatnonzero(labels == g) for g in np.unique(labels)]


def test_ordered_emd_of_this_file_is_the_rescaled_wasserstein_distance_of_ranks(census):
    whole = census["TAXINC"].to_numpy()
    values = np.unique(whole)
    rank = np.searchsorted(values, whole)
    group = np.arange(0, 1080, 7)
    assert ordered_emd(whole[group], whole) == pytest.approx(
        wasserstein_distance(rank[group], rank) / (values.size - 1), abs=1e-12)


def test_cluster_size_of_t_closeness_first_is_the_papers_formula():
    # k' = max(k, ceil(n / (2(n-1)t + 1))), worked by hand: n = 1080, t = 0.05: 1080 / 108.9 = 9.92 -> 10
    assert t_closeness_first_size(1080, 5, 0.05) == 10
    assert t_closeness_first_size(1080, 12, 0.05) == 12
    assert t_closeness_first_size(1080, 2, 0.25) == 2  # 1080 / 540.5 = 1.998 -> 2
    assert t_closeness_first_size(100, 3, 0.01) == math.ceil(100 / (2 * 99 * 0.01 + 1))  # 33.6 -> 34
    assert t_closeness_first_size(50, 3, 0.0) == 50  # t = 0: one group


@pytest.mark.parametrize("method", ["mdav", "pcl"])
def test_t_closeness_first_meets_the_papers_bound_with_distinct_values(method):
    # n = 400 distinct sensitive values, k' = max(3, ceil(400 / (2*399*0.02 + 1))) = ceil(23.1) = 24 does
    # not divide 400; with n = 384 = 16 x 24 every group is one record per bucket and, by the paper's
    # proposition, EMD <= (n - k') / (2 k' (n - 1)) with no merge needed
    rng = np.random.default_rng(3)
    n = 384
    X = rng.normal(size=(n, 3))
    s = rng.permutation(n).astype(float)
    m = SensitiveMicroaggregation(3, t=0.02, algorithm="t-closeness-first", method=method).fit(X, sensitive=s)
    k_prime = math.ceil(n / (2 * (n - 1) * 0.02 + 1))
    assert m.cluster_size_ == k_prime == 24
    assert m.merges_ == 0
    assert (m.sizes_ == k_prime).all()
    bound = (n - k_prime) / (2 * k_prime * (n - 1))
    assert max(ordered_emd(s[g], s) for g in groups_of(m.labels_)) <= bound + 1e-12
    buckets = np.argsort(np.argsort(s)) // (n // k_prime)  # bucket of each record: its rank // 16
    assert all(sorted(buckets[g]) == list(range(k_prime)) for g in groups_of(m.labels_))  # one of each


def sse(X, labels):
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    return sum(((Z[g] - Z[g].mean(axis=0)) ** 2).sum() for g in groups_of(labels))


def test_lloyd_rounds_of_pcl_never_raise_the_sse_of_t_closeness_first(census):
    X, s = census[KEYS].to_numpy(float), census["TAXINC"]
    for k, t in ((5, 0.1), (2, 0.05)):
        mdav = SensitiveMicroaggregation(k, t=t, algorithm="t-closeness-first").fit(X, sensitive=s)
        pcl = SensitiveMicroaggregation(k, t=t, algorithm="t-closeness-first", method="pcl").fit(X, sensitive=s)
        assert pcl.lloyd_rounds_ >= 1 and pcl.sizes_.size == mdav.sizes_.size
        assert sse(X, pcl.labels_) < sse(X, mdav.labels_)


@pytest.mark.parametrize("algorithm,method", [("merge", "mdav"), ("merge", "pcl"), ("k-anonymity-first", "mdav"),
                                              ("t-closeness-first", "mdav"), ("t-closeness-first", "pcl")])
def test_every_group_is_k_anonymous_and_t_close_on_every_sensitive_column(census, algorithm, method):
    sample = census.iloc[::4].reset_index(drop=True)  # 270 records
    X = sample[KEYS].to_numpy(float)
    S = sample[["TAXINC", "FICA"]]
    t, k = 0.2, 3
    m = SensitiveMicroaggregation(k, t=t, algorithm=algorithm, method=method, random_state=0).fit(X, sensitive=S)
    assert m.algorithm_ == algorithm
    for g in groups_of(m.labels_):
        assert g.size >= k
        for c in S.columns:
            assert ordered_emd(S[c].to_numpy()[g], S[c].to_numpy()) <= t + 1e-12
        assert np.allclose(m.centroids_[m.labels_[g]], X[g].mean(axis=0))  # the released values: group means


def test_t_closeness_on_a_categorical_column_uses_the_equal_distance(census):
    sample = census.iloc[::4].reset_index(drop=True)
    X = sample[KEYS].to_numpy(float)
    band = pd.cut(sample["TAXINC"], [-np.inf, 0, 10000, 30000, 60000, np.inf],
                  labels=["none", "low", "mid", "high", "top"]).astype(str)
    for algorithm in ("merge", "k-anonymity-first", "t-closeness-first"):
        m = SensitiveMicroaggregation(3, t=0.15, algorithm=algorithm).fit(X, sensitive=band)
        assert max(equal_emd(band.to_numpy()[g], band.to_numpy()) for g in groups_of(m.labels_)) <= 0.15 + 1e-12


@pytest.mark.parametrize("kind", ["distinct", "entropy"])
@pytest.mark.parametrize("algorithm,method", [("merge", "mdav"), ("merge", "pcl"), ("k-anonymity-first", "mdav")])
def test_every_group_is_l_diverse(census, kind, algorithm, method):
    sample = census.iloc[::4].reset_index(drop=True)
    X = sample[KEYS].to_numpy(float)
    band = pd.cut(sample["FEDTAX"], [-np.inf, 0, 1000, 3000, 8000, np.inf], labels=False).to_numpy()
    l, k = 3, 3
    m = SensitiveMicroaggregation(k, l=l, l_kind=kind, algorithm=algorithm, method=method,
                                  random_state=0).fit(X, sensitive=band)
    plain = MDAV(k).fit(X).labels_
    if kind == "distinct":
        assert min(len(set(band[g])) for g in groups_of(plain)) < l  # the plain groups fail: the test has teeth
        assert all(len(set(band[g])) >= l for g in groups_of(m.labels_))
    else:
        assert min(entropy(band[g]) for g in groups_of(plain)) < math.log(l)
        assert all(entropy(band[g]) >= math.log(l) - 1e-12 for g in groups_of(m.labels_))
    assert min(g.size for g in groups_of(m.labels_)) >= k


def test_t_closeness_first_loses_less_information_than_k_anonymity_first(census):
    # Soria-Comas et al. 2015 conclude that t-closeness-first gives the lowest information loss (SSE) of their
    # three algorithms. The paper's tables could not be read here (only its abstract was reachable from this
    # machine), so no figure of it is quoted. Checked: on half the census (540 records), keys AFNLWGT..STATETAX,
    # TAXINC sensitive, k = 5, at t = 0.1 and 0.05, SSE/SST of t-closeness-first <= k-anonymity-first's and
    # merge's (IL = SSE/SST computed here). It does not hold everywhere: where k' = k is set by k rather than
    # by t (census, k >= 5, t = 0.25), and on EIA, k-anonymity-first loses less (benchmarks/tcloseness.py).
    sample = census.iloc[::2].reset_index(drop=True)
    X = sample[KEYS].to_numpy(float)
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    s = sample["TAXINC"]

    def il(m):
        released = np.vstack([Z[m.labels_ == g].mean(axis=0) for g in range(m.labels_.max() + 1)])[m.labels_]
        return ((Z - released) ** 2).sum() / ((Z - Z.mean(axis=0)) ** 2).sum()

    for t in (0.1, 0.05):
        first = il(SensitiveMicroaggregation(5, t=t, algorithm="t-closeness-first").fit(X, sensitive=s))
        aware = il(SensitiveMicroaggregation(5, t=t, algorithm="k-anonymity-first").fit(X, sensitive=s))
        merged = il(SensitiveMicroaggregation(5, t=t, algorithm="merge").fit(X, sensitive=s))
        assert first <= aware and first <= merged, (t, first, aware, merged)


def test_bad_requests_are_refused():
    X = np.arange(40.0).reshape(20, 2)
    with pytest.raises(ParameterError, match="give t"):
        SensitiveMicroaggregation(3).fit(X, sensitive=np.arange(20))
    with pytest.raises(ParameterError, match="MDAV's"):
        SensitiveMicroaggregation(3, t=0.2, method="pcl", algorithm="k-anonymity-first").fit(X, sensitive=np.arange(20))
    with pytest.raises(InputError, match="2 distinct values"):
        SensitiveMicroaggregation(3, l=3).fit(X, sensitive=np.arange(20) % 2)
    with pytest.raises(InputError, match="rows"):
        SensitiveMicroaggregation(3, t=0.2).fit(X, sensitive=np.arange(19))


# ------------------------------------------------------------------ the command line

ARGS = ["-k", "5", "--keys", ",".join(KEYS), "--confidential", "TAXINC",
        "--drop", "PTOTVAL,POTHVAL,INTVAL,PEARNVAL,FICA,WSALVAL,ERNVAL", "--seed", "3", "--quiet"]


@pytest.fixture(scope="module")
def small_census(tmp_path_factory, census):
    path = tmp_path_factory.mktemp("census") / "census.csv"
    census.iloc[::3].to_csv(path, index=False)  # 360 records
    return path


def run(capsys, argv):
    code = main(argv)
    return code, capsys.readouterr().err


def test_cli_release_is_t_close_and_prints_both_losses(capsys, tmp_path, small_census):
    out = tmp_path / "t.csv"
    code, err = run(capsys, ["microaggregate", str(small_census), "-o", str(out), *ARGS,
                             "--t-closeness", "0.15", "--sensitive", "TAXINC"])
    assert code == 0, err
    release = pd.read_csv(out)
    whole = release["TAXINC"].to_numpy()
    classes = release.groupby(KEYS).indices.values()
    assert min(len(g) for g in classes) >= 5
    assert max(ordered_emd(whole[g], whole) for g in classes) <= 0.15 + 1e-12
    assert "t-closeness-first" in err and "plain MDAV at k = 5" in err
    assert err.count(" %") >= 2  # this release's loss and the plain one


def test_cli_function_refused_for_groups_that_are_not_cells(capsys, tmp_path, small_census):
    code, err = run(capsys, ["microaggregate", str(small_census), "-o", str(tmp_path / "t.csv"), *ARGS,
                             "--t-closeness", "0.15", "--sensitive", "TAXINC", "--function", str(tmp_path / "f.json")])
    assert code == 2 and "not cells of the key space" in err
    assert not (tmp_path / "t.csv").exists() and not (tmp_path / "f.json").exists()


def test_cli_function_of_merged_cells_reproduces_the_release(capsys, tmp_path, small_census):
    out, fn = tmp_path / "t.csv", tmp_path / "f.json"
    code, err = run(capsys, ["microaggregate", str(small_census), "-o", str(out), *ARGS, "--keep-order",
                             "--t-closeness", "0.3", "--t-algorithm", "merge", "--sensitive", "TAXINC",
                             "--function", str(fn)])
    assert code == 0, err
    release, original = pd.read_csv(out), pd.read_csv(small_census)
    function = function_from_json(fn.read_text())
    assert np.array_equal(np.round(function.transform(original[KEYS].to_numpy(float)), 0),
                          release[KEYS].to_numpy(float))
    assert json.loads(fn.read_text())["meta"]["merged_for"] == "t-closeness t = 0.3"


@pytest.mark.parametrize("extra,message", [
    (["--t-closeness", "0.2", "--sensitive", "AGI"], "is key"),
    (["--t-closeness", "0.2"], "--sensitive"),
    (["--sensitive", "TAXINC"], "give one of them"),
    (["--t-closeness", "0.2", "--sensitive", "TAXINC", "--method", "vmdav"], "mdav or pcl"),
    (["--l-diversity", "2", "--t-algorithm", "t-closeness-first", "--sensitive", "TAXINC"], "needs t"),
])
def test_cli_refusals(capsys, tmp_path, small_census, extra, message):
    code, err = run(capsys, ["microaggregate", str(small_census), "-o", str(tmp_path / "t.csv"), *ARGS, *extra])
    assert code == 2 and message in err, err
    assert not (tmp_path / "t.csv").exists()


def test_cli_refuses_a_release_that_breaks_the_property(capsys, tmp_path, small_census, monkeypatch):
    # the estimator made to hand back plain MDAV groups: the check on the release must stop it
    fit = SensitiveMicroaggregation.fit

    def plain_groups(self, X, y=None, *, sensitive=None):
        fit(self, X, sensitive=sensitive)
        plain = MDAV(self.k).fit(X)
        self.labels_, self.centroids_ = plain.labels_, plain.centroids_
        return self

    monkeypatch.setattr(SensitiveMicroaggregation, "fit", plain_groups)
    code, err = run(capsys, ["microaggregate", str(small_census), "-o", str(tmp_path / "t.csv"), *ARGS,
                             "--t-closeness", "0.15", "--sensitive", "TAXINC"])
    assert code == 2 and "t-closeness <= 0.15: FAILS" in err, err
    assert not (tmp_path / "t.csv").exists()


def test_one_more_record_of_each_value_is_the_emd_and_entropy_of_the_grown_class():
    # the O(m) scores k-anonymity-first grows groups by, against this file's EMD and entropy of each grown class
    from probanon.diversity.checks import _one_more

    rng = np.random.default_rng(1)
    for m in (1, 2, 9):
        values = np.arange(m)
        whole = rng.integers(0, m, 60)
        group = rng.integers(0, m, 7)
        row = np.bincount(group, minlength=m).astype(float)
        share = np.bincount(whole, minlength=m) / whole.size
        for ordered in (True, False):
            emd, h = _one_more(row, share, ordered)
            for v in values:
                grown = np.append(group, v)
                p, pc = share, np.bincount(grown, minlength=m) / grown.size
                want = 0.0 if m == 1 else (np.abs(np.cumsum(pc - p)).sum() / (m - 1) if ordered
                                            else 0.5 * np.abs(pc - p).sum())
                assert emd[v] == pytest.approx(want, abs=1e-12)
                assert h[v] == pytest.approx(entropy(grown), abs=1e-12)


@pytest.fixture(scope="module")
def banded_census(tmp_path_factory, census):
    path = tmp_path_factory.mktemp("banded") / "census.csv"
    sample = census.iloc[::3][KEYS + ["TAXINC"]].copy()
    # a category the keys do not determine (a band of FEDTAX, a key, is refused by the audit: FEDTAX
    # determines it), drawn at random: plain MDAV groups of 3 often hold fewer than 3 of its values
    sample["BAND"] = np.random.default_rng(7).choice(["none", "low", "mid", "high", "top"], len(sample))
    sample.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("method,kind", [("mdav", "distinct"), ("pcl", "entropy")])
def test_cli_l_diverse_release(capsys, tmp_path, banded_census, method, kind):
    out = tmp_path / "l.csv"
    code, err = run(capsys, ["microaggregate", str(banded_census), "-o", str(out), "-k", "3", "--keys", ",".join(KEYS),
                             "--confidential", "TAXINC,BAND", "--seed", "1", "--quiet", "--method", method,
                             "--l-diversity", "3", "--l-kind", kind, "--sensitive", "BAND"])
    assert code == 0, err
    release = pd.read_csv(out)
    for rows in release.groupby(KEYS).indices.values():
        band = release["BAND"].to_numpy()[rows]
        assert len(rows) >= 3
        assert (len(set(band)) >= 3) if kind == "distinct" else (entropy(band) >= math.log(3) - 1e-12)
    assert f"plain {method.upper()} at k = 3" in err


def test_cli_refuses_an_l_the_file_cannot_give(capsys, tmp_path, banded_census):
    code, err = run(capsys, ["microaggregate", str(banded_census), "-o", str(tmp_path / "l.csv"), "-k", "3",
                             "--keys", ",".join(KEYS), "--confidential", "TAXINC,BAND", "--quiet",
                             "--l-diversity", "6", "--sensitive", "BAND"])
    present = pd.read_csv(banded_census)["BAND"].nunique()  # the 5 bands, fewer than 6
    assert code == 2 and f"'BAND' has {present} distinct values in the whole file" in err, err
    assert not (tmp_path / "l.csv").exists()
