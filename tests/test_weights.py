"""Sampling weights (issue 17, point 1): weighted centroids, weighted information loss and
moments, the weight column in the CLI. Figures come from hand computations or from the
same data with every record repeated w_i times (integer weights)."""

import numpy as np
import pandas as pd
import pytest
from helpers import casc

from probanon.cli import main
from probanon.errors import InputError
from probanon.metrics import information_loss, utility_report
from probanon.microagg import MDAV, PCL, VMDAV, IndividualRanking

TWO_CLUSTERS = np.array([[0, 0], [1, 0], [0, 1], [10, 10], [11, 10], [10, 11]], dtype=float)
W = np.array([1, 2, 3, 4, 5, 6], dtype=float)


@pytest.mark.parametrize("model", [MDAV(3), VMDAV(3), PCL(3, random_state=0), IndividualRanking(3)])
def test_weighted_centroids_by_hand(model):
    released = model.fit_transform(TWO_CLUSTERS, sample_weight=W)
    # cluster A: (0*1 + 1*2 + 0*3)/6 = 1/3 and (0 + 0 + 1*3)/6 = 1/2;
    # cluster B: (10*4 + 11*5 + 10*6)/15 = 155/15 and (10*4 + 10*5 + 11*6)/15 = 156/15
    expected = np.array([[1 / 3, 1 / 2]] * 3 + [[155 / 15, 156 / 15]] * 3)
    if isinstance(model, IndividualRanking):  # column by column: the same groups here, by construction
        expected[:, 1] = [0.5, 0.5, 0.5, 156 / 15, 156 / 15, 156 / 15]
    np.testing.assert_allclose(released, expected, rtol=1e-12)
    np.testing.assert_allclose(model.transform(TWO_CLUSTERS), released, rtol=1e-12)  # the published function


@pytest.mark.parametrize("cls", [MDAV, PCL])
def test_weights_keep_the_weighted_totals_and_not_the_partition(cls):
    X = casc("census")
    w = np.random.default_rng(1).uniform(0.5, 40, len(X))
    plain = cls(5, **({"random_state": 0} if cls is PCL else {})).fit(X)
    weighted = cls(5, **({"random_state": 0} if cls is PCL else {})).fit(X, sample_weight=w)
    np.testing.assert_array_equal(weighted.labels_, plain.labels_)
    released = weighted.centroids_[weighted.labels_]
    for g in range(weighted.labels_.max() + 1):  # every group keeps its weighted total
        rows = weighted.labels_ == g
        np.testing.assert_allclose(w[rows] @ released[rows], w[rows] @ X[rows], rtol=1e-10)
    assert weighted.function_.meta["weighted"] and not plain.function_.meta["weighted"]


def test_weighted_utility_equals_the_replicated_file():
    """Integer weights w_i: every weighted figure is the figure of the file with record i
    repeated w_i times."""
    X = casc("tarragona")[:300, :5]
    Y = MDAV(4).fit_transform(X)
    w = np.random.default_rng(2).integers(1, 6, len(X)).astype(float)
    Xr, Yr = np.repeat(X, w.astype(int), axis=0), np.repeat(Y, w.astype(int), axis=0)
    assert information_loss(X, Y, weights=w) == pytest.approx(information_loss(Xr, Yr), rel=1e-9)
    weighted, replicated = utility_report(X, Y, weights=w), utility_report(Xr, Yr)
    for field in ("mean_difference", "variance_difference"):
        a, b = getattr(weighted, field), getattr(replicated, field)
        np.testing.assert_allclose([a[c] for c in a], [b[c] for c in b], rtol=1e-8, atol=1e-9)
    assert weighted.correlation_difference_max == pytest.approx(replicated.correlation_difference_max, rel=1e-8)
    assert information_loss(X, Y, weights=w) != pytest.approx(information_loss(X, Y), rel=1e-6)


@pytest.mark.parametrize("bad, fragment", [([1, 2, 3, -1, 1, 1], "row 3 holds -1"),
                                           ([1, 2, 3, np.nan, 1, 1], "row 3 holds nan"),
                                           ([1, 2, 3, 0, 1, 1], "row 3 holds 0"),
                                           ([1, 2], "2 values for 6 records")])
def test_bad_weights_in_the_api(bad, fragment):
    with pytest.raises(InputError, match=fragment):
        MDAV(3).fit(TWO_CLUSTERS, sample_weight=bad)


def _census_file(tmp_path, spoil=None):
    frame = pd.read_csv(casc.__globals__["DATA"] / "census.csv")[["AFNLWGT", "AGI", "EMCONTRB", "FEDTAX"]]
    frame["w"] = np.random.default_rng(3).uniform(1, 30, len(frame)).round(3)
    if spoil is not None:
        frame["w"] = frame["w"].astype(object)
        frame.loc[5, "w"] = spoil
    path = tmp_path / "census.csv"
    frame.to_csv(path, index=False)
    return frame, path


def test_cli_weights(tmp_path, capsys):
    frame, path = _census_file(tmp_path)
    out = tmp_path / "out.csv"
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "5", "--keys", "AFNLWGT,AGI,EMCONTRB",
                 "--confidential", "FEDTAX", "--weights", "w", "--keep-order", "--quiet"]) == 0
    err = capsys.readouterr().err
    released = pd.read_csv(out)
    pd.testing.assert_series_equal(released["w"], frame["w"])  # released unchanged
    keys = ["AFNLWGT", "AGI", "EMCONTRB"]
    total = (frame[keys].to_numpy() * frame[["w"]].to_numpy()).sum(0)
    # the means rounded to whole numbers (the census is): each record's value moves by at most 1/2
    moved = np.abs((released[keys].to_numpy() * frame[["w"]].to_numpy()).sum(0) - total)
    assert np.all(moved <= 0.5 * frame["w"].sum())
    assert "sampling weight: released unchanged" in err and "weighted information loss" in err
    assert "group weighted mean" in err
    exact = tmp_path / "exact.csv"  # 15 decimals: the weighted means as computed, which keep the totals
    assert main(["microaggregate", str(path), "-o", str(exact), "-k", "5", "--keys", "AFNLWGT,AGI,EMCONTRB",
                 "--confidential", "FEDTAX", "--weights", "w", "--keep-order", "--quiet", "--decimals", "15"]) == 0
    released = pd.read_csv(exact)
    np.testing.assert_allclose((released[keys].to_numpy() * frame[["w"]].to_numpy()).sum(0), total, rtol=1e-10)


@pytest.mark.parametrize("spoil, extra, fragment", [(-2.0, [], "line 7 holds -2.0"), (np.nan, [], "line 7 holds nan"),
                                                    ("many", [], "line 7 holds 'many'"),
                                                    (None, ["--weights", "weight"], "weight column 'weight' is not"),
                                                    (None, ["--confidential", "FEDTAX,w"], "cannot also be confidential")])
def test_cli_bad_weights_are_one_line_errors_without_output(tmp_path, capsys, spoil, extra, fragment):
    _, path = _census_file(tmp_path, spoil)
    out = tmp_path / "out.csv"
    args = ["microaggregate", str(path), "-o", str(out), "-k", "5", "--keys", "AFNLWGT,AGI,EMCONTRB", "--quiet"]
    args += extra if "--confidential" in extra else ["--confidential", "FEDTAX", *extra]
    if "--weights" not in args:
        args += ["--weights", "w"]
    assert main(args) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0], err
    assert not out.exists()


def test_survey_design_weights_the_centroids_and_distortion():
    """Design weights d_j: the cells are those of the unweighted design; centroids and D weight
    each record by d_j pi_j (formula recomputed here from the labels)."""
    from probanon.survey.design import design

    X = casc("census")[:, :3]
    d = np.random.default_rng(5).uniform(1, 50, len(X))
    pi = np.random.default_rng(6).uniform(0.4, 0.9, len(X))
    plain = design(X, 5, pi, 0.05)
    weighted = design(X, 5, pi, 0.05, weights=d)
    np.testing.assert_array_equal(weighted.labels, plain.labels)
    mass, labels = d * pi, weighted.labels
    mean = np.average(X, axis=0, weights=d)
    Z = (X - mean) / np.sqrt(np.average((X - mean) ** 2, axis=0, weights=d))  # the population's z-scores
    zc = np.array([np.average(Z[labels == g], axis=0, weights=mass[labels == g]) for g in range(labels.max() + 1)])
    D = (mass * ((Z - zc[labels]) ** 2).sum(1)).sum() / (3 * mass.sum())
    assert weighted.distortion == pytest.approx(D, rel=1e-9) and weighted.distortion != pytest.approx(plain.distortion)
    xc = np.array([np.average(X[labels == g], axis=0, weights=mass[labels == g]) for g in range(labels.max() + 1)])
    np.testing.assert_allclose(weighted.function.centroids, xc, rtol=1e-12)
    with pytest.raises(InputError, match="row 2 holds -1"):
        design(X, 5, pi, 0.05, weights=np.r_[1, 1, -1, np.ones(len(X) - 3)])
