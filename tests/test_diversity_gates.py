"""Issue 13 for the diversity commands (paper 4): ``diversity check`` gates on -k / -l --sense /
-t (exit 0 / 1 / 2, point 6); ``diversity plan --normalize`` (point 11); progress of
``diversity plan`` (point 13).

The hospital table: class A = (1, 30) holds flu, flu, cold; class B = (2, 40) flu, cold,
cancer, cancer. By hand: k = 3; distinct l = 2; entropy l = exp(H_A) = 3 / 2^(2/3) = 1.890
(H_A = ln 3 - (2/3) ln 2 < H_B = (3/2) ln 2); t = max(2/7, 3/14) = 2/7 (equal distance);
recursive (c, l): A has r = (2, 1), B r = (2, 1, 1); with c = 2.5, A holds l = 2 (2 < 2.5 * 1)
and B l = 3 (2 < 2.5 * 1), so l = 2; with c = 2, A fails l = 2 (2 < 2 * 1 is false), so l = 1.
"""

import json
import math

import numpy as np
import pandas as pd
import pytest

from helpers import increments
from probanon.cli import main
from probanon.diversity import _greedy_kernel, planning
from probanon.diversity.checks import diversity_report
from probanon.diversity.distribution import check_pmf, distribution_from_array
from probanon.diversity.planning import pareto_front, plan_diversity
from probanon.errors import InputError, ParameterError


@pytest.fixture
def hospital(tmp_path):
    path = tmp_path / "released.csv"
    pd.DataFrame({"zip": [1, 1, 1, 2, 2, 2, 2], "age": [30, 30, 30, 40, 40, 40, 40],
                  "disease": ["flu", "flu", "cold", "flu", "cold", "cancer", "cancer"]}).to_csv(path, index=False)
    return path


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def check(capsys, hospital, *extra):
    return run(capsys, ["diversity", "check", str(hospital), "--qi", "zip,age", "--sensitive", "disease", *extra])


T = 2 / 7
L_ENTROPY = 3 / 2 ** (2 / 3)


@pytest.mark.parametrize("extra, failed", [
    ([], None),
    (["-k", "3"], []),
    (["-k", "4"], ["k-anonymity"]),
    (["-l", "2"], []),
    (["-l", "3"], ["distinct l-diversity"]),
    (["-l", "2", "--sense", "distinct"], []),
    (["-l", "1", "--sense", "entropy"], []),
    (["-l", "2", "--sense", "entropy"], ["entropy l-diversity"]),
    (["-l", "2", "--sense", "recursive", "--c", "2.5"], []),
    (["-l", "3", "--sense", "recursive", "--c", "2.5"], ["recursive (c, l)-diversity"]),
    (["-l", "2", "--sense", "recursive", "--c", "2"], ["recursive (c, l)-diversity"]),
    (["-t", "0.3"], []),
    (["-t", repr(T)], []),  # exactly at the bound
    (["-t", "0.28"], ["t-closeness"]),
    (["-k", "3", "-l", "3", "-t", "0.3"], ["distinct l-diversity"]),
    (["-k", "4", "-l", "2", "--sense", "entropy", "-t", "0.2"], ["k-anonymity", "entropy l-diversity", "t-closeness"]),
])
def test_check_exits_1_exactly_when_a_requirement_fails(capsys, hospital, extra, failed):
    code, out, err = check(capsys, hospital, *extra, "--json")
    assert err == ""
    d = json.loads(out)
    assert code == (1 if failed else 0)
    assert d["holds"] == (None if failed is None else not failed)
    assert d["failed"] == (failed or [])
    achieved = {"k-anonymity": 3, "distinct l-diversity": 2, "entropy l-diversity": L_ENTROPY,
                "recursive (c, l)-diversity": 2 if "2.5" in extra else 1, "t-closeness": T}
    for r in d["requirements"]:
        assert r["achieved"] == pytest.approx(achieved[r["property"]], rel=1e-12)
        assert r["holds"] == (r["property"] not in failed)
    code_text, out, _ = check(capsys, hospital, *extra)
    assert code_text == code
    if failed:
        assert f"FAILS: {', '.join(failed)}" in out
        assert all(f"{name} " in out for name in failed)
    elif failed == []:
        assert "every requirement holds" in out
    else:
        assert "required" not in out and "result" not in out


@pytest.mark.parametrize("extra, fragment", [
    (["--sense", "entropy"], "give -l too"),
    (["-l", "2", "--sense", "recursive"], "needs --c"),
    (["-t", "-0.1"], "t (t-closeness) must be a number in [0, 1]"),
    (["-t", "1.5"], "t (t-closeness) must be a number in [0, 1]"),
    (["-t", "nan"], "t (t-closeness) must be a number in [0, 1]"),
    (["-k", "0"], "k must be"),
    (["-l", "0"], "l must be"),
])
def test_check_bad_requirements_are_errors(capsys, hospital, extra, fragment):
    try:
        code, out, err = check(capsys, hospital, *extra)
    except SystemExit as e:  # argparse-level refusals
        code, (out, err) = e.code, capsys.readouterr()
    assert code == 2 and out == "" and err.startswith("probanon: error: ") and err.count("\n") == 1
    assert fragment in err


def test_report_requirements_in_the_api():
    table = pd.DataFrame({"q": [1, 1, 2, 2], "s": ["a", "b", "a", "a"]})
    r = diversity_report(table, "q", "s", k=2, l=2, t=0.25)
    # class 2 holds one value; whole table a 3/4, b 1/4; class 2 EMD = 1/2 (1/4 + 1/4) = 1/4
    assert r.holds is False and r.failed == ["distinct l-diversity"]
    assert [q.achieved for q in r.requirements] == [2, 1, pytest.approx(0.25)]
    assert diversity_report(table, "q", "s").holds is None
    with pytest.raises(ParameterError, match="needs c"):
        diversity_report(table, "q", "s", l=2, sense="recursive")
    with pytest.raises(ParameterError, match="sense"):
        diversity_report(table, "q", "s", l=2, sense="sorted")


# ----------------------------------------------------------------- --normalize

# uniform |Q| = 10 x |S| = 5 scaled by (1 - 5e-7): within 1e-6 of summing to one, not within 1e-9.
# Renormalized: P(q, s) = 1/50, p_l = 1/5; l = 2, beta = 1/2 gives p = 1/10, so a class needs
# 5 QI values (5/50 = p) -> 2 classes; m = min(|Q| = 10, 1/(l p) = 5, sum_{i>=2} p_i / p = 0.8/0.1 = 8) = 5,
# N = ceil(ln(5 * 2 / 0.01) / ln(1 / 0.9)) = ceil(65.56) = 66. Unnormalized, 5 values give
# 0.1 (1 - 5e-7) < p (by 5e-7 relative, far above RTOL = 1e-9): 6 values per class, 1 class.
SCALE = 1 - 5e-7


def _uniform(tmp_path, scale, name="dist.csv"):
    q, s = np.divmod(np.arange(50), 5)
    path = tmp_path / name
    pd.DataFrame({"q": q, "sensitive": s, "probability": np.full(50, scale / 50)}).to_csv(path, index=False)
    return path


def _plan(capsys, path, *extra):
    return run(capsys, ["diversity", "plan", "--distribution", str(path), "-l", "2", "--delta", "0.01",
                        "--beta", "0.5", "--quiet", "--json", *extra])


def test_normalize_accepts_a_sum_within_1e6(tmp_path, capsys):
    path = _uniform(tmp_path, SCALE)
    code, out, err = _plan(capsys, path)
    assert code == 2 and out == "" and err.count("\n") == 1 and "--normalize" in err
    code, out, err = _plan(capsys, path, "--normalize")
    assert code == 0
    assert err.count("\n") == 1 and "divided" in err and repr(float(np.full(50, SCALE / 50).sum())) in err
    plan = json.loads(out)
    assert plan["classes"] == 2 and plan["p"] == pytest.approx(0.1, rel=1e-12)
    assert plan["m"] == pytest.approx(5.0) and plan["n_samples"] == math.ceil(math.log(1000) / math.log(1 / 0.9)) == 66


def test_normalize_refuses_a_sum_beyond_1e6(tmp_path, capsys):
    path = _uniform(tmp_path, 1 - 2e-6)
    for extra in ([], ["--normalize"]):
        code, out, err = _plan(capsys, path, *extra)
        assert code == 2 and out == "" and err.startswith("probanon: error: ") and err.count("\n") == 1
        assert "sum to" in err and "within 1e-06 of 1 only" in err


def test_normalize_in_the_api():
    P = np.full((10, 5), SCALE / 50)
    with pytest.raises(InputError, match="normalize"):
        check_pmf(P)
    Q = check_pmf(P, normalize=True)
    assert Q.sum() == pytest.approx(1.0, abs=1e-15) and np.allclose(Q, 1 / 50, rtol=1e-15, atol=0)
    d = distribution_from_array(P, normalize=True)
    assert d.renormalized_from == pytest.approx(SCALE, rel=1e-15)
    assert distribution_from_array(np.full((10, 5), (1 - 5e-10) / 50)).renormalized_from is None  # within 1e-9
    with pytest.raises(InputError, match="sum to"):
        check_pmf(np.full((10, 5), (1 + 2e-6) / 50), normalize=True)


# ----------------------------------------------------------------- progress


def test_plan_reports_progress_after_its_checks_and_before_the_kernels(monkeypatch):
    events = []
    for module in (planning, _greedy_kernel):
        for name in ("greedy_kernel", "class_sums_kernel"):
            if hasattr(module, name):
                original = getattr(module, name)

                def wrapped(*args, _original=original, _name=name, **kwargs):
                    events.append(_name)
                    return _original(*args, **kwargs)

                monkeypatch.setattr(module, name, wrapped)
    dist = distribution_from_array(np.full((10, 5), 1 / 50))
    plan = plan_diversity(dist, 2, 0.01, progress=increments(events))
    assert events[0] == 0 and isinstance(events[1], str)
    assert events.count(1) == events.count("greedy_kernel") >= 1  # one call per partition
    events.clear()
    front = pareto_front(dist, 2, 0.01, progress=increments(events))
    counts = [e for e in events if isinstance(e, int)]
    # at the smallest p every QI value is its own class (P(q, s) = 1/50 > 0 for all s): 10
    assert events[0] == 0 and sum(counts) == 10 == front["classes"].max() == plan.classes
    events.clear()
    for bad in (dict(l=6), dict(delta=0.0), dict(beta=2.0), dict(budget=0), dict(p=-1.0)):
        args = dict(l=2, delta=0.01) | bad
        with pytest.raises(ParameterError):
            plan_diversity(dist, args.pop("l"), args.pop("delta"), progress=increments(events), **args)
    assert events == []


def test_plan_cli_progress_on_stderr_and_quiet(tmp_path, capsys):
    path = _uniform(tmp_path, 1.0)
    argv = ["diversity", "plan", "--distribution", str(path), "-l", "2", "--delta", "0.01", "--json", "--front"]
    code, out, err = run(capsys, argv)
    assert code == 0 and json.loads(out)["classes"] == 10
    assert err.startswith("diversity plan: 10 QI values x 5 sensitive values") and "partitions" in err
    assert "Pareto front" in err and "10/" not in err  # counted, no total
    code, out, err = run(capsys, argv + ["--quiet"])
    assert code == 0 and err == ""
    code, out, err = run(capsys, argv[:-1] + ["-l", "9"])
    assert code == 2 and err.startswith("probanon: error: ") and err.count("\n") == 1
