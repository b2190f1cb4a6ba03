"""Participation models fitted on a previous wave (issue 18.3): the logistic fit, its lower
confidence bound, the published model and the bad inputs."""

import json
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from helpers import brute_qbar

from probanon.cli import main
from probanon.errors import (
    InputError,
    NotFittedError,
    ParameterError,
    SpecificationError,
)
from probanon.survey.design import design
from probanon.survey.participation import LogisticParticipation, participation_from_spec
from probanon.survey.simulation import simulate_spec
from probanon.survey.spec import build_spec, digest, verify

TRUE_BETA = np.array([-0.5, 0.8, 0.1])  # intercept, x1, x2
K, RISK = 3, 0.01


def frames(n=400, seed=0):
    """(previous wave with 'responded', new frame) of the same kind of frame; responses drawn
    from pi = expit(TRUE_BETA . (1, x1, x2))."""
    rng = np.random.default_rng(seed)

    def frame(m):
        return pd.DataFrame({"x1": rng.normal(0, 1, m), "x2": rng.uniform(0, 10, m), "q": rng.normal(50, 10, m)})

    wave = frame(n)
    eta = TRUE_BETA[0] + TRUE_BETA[1] * wave["x1"] + TRUE_BETA[2] * wave["x2"]
    wave["responded"] = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    return wave, frame(300)


def irls(X, y):
    """Independent maximum likelihood: Newton-Raphson on the log-likelihood of a logistic
    regression, X with its column of ones; returns (beta, inverse information at beta)."""
    beta = np.zeros(X.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-X @ beta))
        info = X.T @ (X * (p * (1 - p))[:, None])
        step = np.linalg.solve(info, X.T @ (y - p))
        beta = beta + step
        if np.abs(step).max() < 1e-13:
            break
    p = 1 / (1 + np.exp(-X @ beta))
    return beta, np.linalg.inv(X.T @ (X * (p * (1 - p))[:, None]))


def one_line(exc_info):
    text = str(exc_info.value)
    assert text and "\n" not in text
    return text


@pytest.fixture(scope="module")
def data():
    return frames()


@pytest.fixture(scope="module")
def robust_design(data):
    wave, new = data
    model = LogisticParticipation(["x1", "x2"], confidence=0.95, optimism=0.1).fit(wave)
    d = design(new, K, model, RISK)
    return model, d, json.loads(json.dumps(build_spec(d)))  # what a respondent downloads


def test_fit_matches_an_independent_newton_raphson(data):
    wave, _ = data
    m = LogisticParticipation(["x1", "x2"]).fit(wave)
    X = np.column_stack([np.ones(len(wave)), wave[["x1", "x2"]].to_numpy()])
    beta, cov = irls(X, wave["responded"].to_numpy(float))
    np.testing.assert_allclose(np.r_[m.intercept_, m.coef_], beta, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(m.covariance_, cov, rtol=1e-6)
    assert m.n_ == len(wave) and m.covariates_ == ["x1", "x2"]
    # the estimates are near the true coefficients the wave was drawn from (within 4 standard errors)
    assert (np.abs(beta - TRUE_BETA) < 4 * np.sqrt(np.diag(cov))).all()


def test_probabilities_and_their_lower_bound_recomputed_independently(data):
    wave, new = data
    c, F = 0.99, 0.2
    point = LogisticParticipation(["x1", "x2"]).fit(wave)
    robust = LogisticParticipation(["x1", "x2"], confidence=c, optimism=F).fit(wave)
    z = NormalDist().inv_cdf(c)
    beta = np.r_[robust.intercept_, robust.coef_]
    expected_point, expected_lower = [], []
    for x1, x2 in new[["x1", "x2"]].itertuples(index=False):
        x = np.array([1.0, x1, x2])
        eta = float(x @ beta)
        se = float(np.sqrt(x @ robust.covariance_ @ x))
        expected_point.append(1 / (1 + np.exp(-eta)))
        expected_lower.append(1 / (1 + np.exp(-(eta - z * se))) / (1 + F))
    np.testing.assert_allclose(point.probabilities(new), expected_point, rtol=1e-12)
    np.testing.assert_allclose(robust.probabilities(new), expected_lower, rtol=1e-12)
    assert (robust.probabilities(new) < point.probabilities(new)).all()


def test_design_publishes_the_model_and_the_spec_gives_back_the_pi_j(data, robust_design):
    wave, new = data
    model, d, spec = robust_design
    g = spec["guarantee"]["participation"]
    assert g["model"] == "logistic" and g["covariates"] == ["x1", "x2"] and g["optimism"] == 0.1
    assert g["lower_bound"]["confidence"] == 0.95 and g["wave_records"] == len(wave)
    assert d.participation_model == model.to_spec()
    # anyone holding the frame recomputes the design's pi_j from the published model alone
    np.testing.assert_array_equal(participation_from_spec(g, new), d.record_participation)
    # the covariates are no quasi-identifiers unless named
    assert list(d.function.columns) == ["q"]
    assert list(design(new, K, model, RISK, columns=["q", "x1"]).function.columns) == ["q", "x1"]
    # every cell carries its members' sorted pi_j and is safe (failure by convolution)
    for c, cell in enumerate(spec["cells"]):
        members = d.record_participation[d.labels == c]
        assert cell["participation"] == sorted(members.tolist())
        assert brute_qbar(members, K) <= RISK
        np.testing.assert_allclose(cell["failure"], brute_qbar(members, K), rtol=1e-9)
    verify(spec)
    assert simulate_spec(spec, new, 50, random_state=0).runs == 50


def test_verify_checks_the_model_fields_and_the_frame_checks_the_lists(data, robust_design):
    _, new = data
    _, _, spec = robust_design

    def altered(change):
        s = json.loads(json.dumps(spec))
        change(s["guarantee"]["participation"])
        s["digest"] = digest(s)
        return s

    # another coefficient (digest recomputed): verify, without the frame, cannot see it; the
    # population's pi_j recomputed from the altered model no longer match the cells' lists
    s = altered(lambda m: m["coefficients"].__setitem__(0, m["coefficients"][0] + 0.5))
    verify(s)
    with pytest.raises(InputError, match="participation probabilities of the population's records differ"):
        simulate_spec(s, new, 10, random_state=0)
    for change, fragment in [
        (lambda m: m["coefficients"].__setitem__(0, "0.8"), "finite number"),
        (lambda m: m["coefficients"].pop(), "need as many coefficients"),
        (lambda m: m.pop("intercept"), "missing participation 'intercept'"),
        (lambda m: m.__setitem__("covariates", ["x1", "x1"]), "distinct column names"),
        (lambda m: m.__setitem__("optimism", -0.1), "optimism"),
        (lambda m: m.__setitem__("wave_records", 1.5), "wave_records"),
        (lambda m: m["lower_bound"].__setitem__("confidence", 1.0), r"confidence .* \(0.5, 1\)"),
        (lambda m: m["lower_bound"]["covariance"][0].__setitem__(1, 5.0), "symmetric positive"),
        (lambda m: m["lower_bound"]["covariance"].pop(), "3 x 3"),
    ]:
        with pytest.raises(SpecificationError, match=fragment) as exc:
            verify(altered(change))
        one_line(exc)
    # a cell's pi_j list is what Algorithm A checks: a changed value contradicts its declared failure
    s = json.loads(json.dumps(spec))
    s["cells"][0]["participation"][0] /= 2
    s["digest"] = digest(s)
    with pytest.raises(SpecificationError, match="cell 0: declared failure"):
        verify(s)


def test_bad_inputs_give_one_line_errors(data):
    wave, new = data
    fit = LogisticParticipation(["x1", "x2"]).fit
    cases = [
        (wave.drop(columns=["responded"]), InputError, "no responded column 'responded'"),
        (wave.assign(responded=wave["responded"].where(wave.index != 5, 2)), InputError, r"0 or 1 \(row 5: 2\)"),
        (wave.assign(responded=wave["responded"].astype(object).where(wave.index != 7, "yes")), InputError,
         r"row 7: 'yes'"),
        (wave.assign(responded=wave["responded"].where(wave.index != 3, np.nan)), InputError, "row 3: nan"),
        (wave.assign(responded=1), InputError, "everyone responded"),
        (wave.assign(responded=0), InputError, "no-one responded"),
        (wave.drop(columns=["x1", "x2"]), InputError, "no covariate 'x1', 'x2'"),
        (wave.assign(x2=wave["x2"].where(wave.index != 4, np.nan)), InputError, "missing or infinite value"),
        (wave.assign(x2=wave["x2"].astype(object).where(wave.index != 4, "ten")), InputError, "text"),
        (wave.assign(x2=2 * wave["x1"]), InputError, "collinear"),
        (wave.assign(responded=(wave["x1"] > 0).astype(int)), InputError, "perfect separation"),
    ]
    for frame, error, fragment in cases:
        with pytest.raises(error, match=fragment) as exc:
            fit(frame)
        one_line(exc)
    for params, fragment in [({"confidence": 0.5}, r"\(0.5, 1\)"), ({"confidence": 1.0}, r"\(0.5, 1\)"),
                             ({"optimism": -0.1}, ">= 0"), ({"covariates": []}, "non-empty"),
                             ({"covariates": ["responded"]}, "cannot be a covariate")]:
        kwargs = {"covariates": ["x1", "x2"], **params}
        with pytest.raises(ParameterError, match=fragment) as exc:
            LogisticParticipation(**kwargs).fit(wave)
        one_line(exc)
    model = LogisticParticipation(["x1", "x2"]).fit(wave)
    with pytest.raises(InputError, match="the population has no covariate 'x2'") as exc:
        design(new.drop(columns=["x2"]), K, model, RISK)
    one_line(exc)
    with pytest.raises(InputError, match="probability 0") as exc:  # eta = b0 + b x1 below -745
        model.probabilities(new.assign(x1=-1e4 * np.sign(model.coef_[0])))
    one_line(exc)
    with pytest.raises(NotFittedError):
        LogisticParticipation(["x1"]).probabilities(new)


def test_cli_design_verify_simulate_and_refusals(data, tmp_path, capsys):
    wave, new = data
    pop, prev, spec = tmp_path / "pop.csv", tmp_path / "wave.csv", tmp_path / "spec.json"
    new.to_csv(pop, index=False)
    wave.to_csv(prev, index=False)
    base = ["survey", "design", str(pop), "-k", str(K), "--risk", str(RISK), "--quiet", "-o", str(spec)]
    assert main(base + ["--previous-wave", str(prev), "--covariates", "x1,x2", "--robust", "0.9",
                        "--optimism", "0.2"]) == 0
    published = json.loads(spec.read_text())
    model = LogisticParticipation(["x1", "x2"], confidence=0.9, optimism=0.2).fit(pd.read_csv(prev))
    assert published["guarantee"]["participation"] == json.loads(json.dumps(model.to_spec()))
    assert main(["survey", "verify", str(spec)]) == 0
    capsys.readouterr()
    assert main(["survey", "simulate", str(spec), str(pop), "--runs", "100", "--seed", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == 100
    bad_wave = tmp_path / "bad.csv"
    wave.assign(responded=wave["responded"].where(wave.index != 5, 3)).to_csv(bad_wave, index=False)
    out = tmp_path / "out.json"
    base[-1] = str(out)
    for extra, fragment in [
        (["--previous-wave", str(bad_wave), "--covariates", "x1,x2"], "(line 7: 3)"),
        (["--previous-wave", str(prev), "--covariates", "x1,nope"], "no covariate 'nope'"),
        (["--previous-wave", str(prev), "--covariates", "x1", "--responded", "none"], "no responded column"),
        (["--previous-wave", str(prev)], "needs --covariates"),
        (["--previous-wave", str(prev), "--covariates", "x1", "--robust", "1.5"], "(0.5, 1)"),
        (["--previous-wave", str(prev), "--covariates", "x1", "--optimism", "-1"], ">= 0"),
        (["--participation", "0.5", "--covariates", "x1"], "need --previous-wave"),
        (["--participation", "0.5", "--previous-wave", str(prev), "--covariates", "x1"], "not allowed with"),
    ]:
        assert main(base + extra) != 0
        err = capsys.readouterr().err.strip()
        assert fragment in err and len(err.splitlines()) == 1, err
        assert not out.exists()
    # a population without the covariates: the model cannot be applied
    new.drop(columns=["x1"]).to_csv(pop, index=False)
    assert main(base + ["--previous-wave", str(prev), "--covariates", "x1,x2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "the population has no covariate 'x1'" in err and len(err.splitlines()) == 1 and not out.exists()
