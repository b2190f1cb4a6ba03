"""Issue 13 for the survey commands (paper 1): ``survey verify`` exits 0 / 1 / 2 and compares
the out-of-band digest (points 6, 7); ``survey simulate`` refuses a population that is not the
one the specification declares (point 6); ``survey design`` shows its progress on stderr
(point 13).

Expected numbers come from independent computations: the digest from hashlib on the canonical
JSON form the specification documents, cell failures from the binomial law (scipy) or a
convolution of the Bernoulli pmfs, n_min by a direct search over the binomial law."""

import hashlib
import json

import numpy as np
import pandas as pd
import pytest
from test_survey_design import (  # binomial law; convolution of Bernoulli pmfs
    brute_qbar,
    qbar,
)

from helpers import increments
from probanon.cli import main
from probanon.errors import InputError, SpecificationError
from probanon.survey import design as design_module
from probanon.survey.design import design
from probanon.survey.simulation import simulate_spec
from probanon.survey.spec import GuaranteeError, build_spec, verify

K, PI, RISK = 3, 0.6, 0.01


def n_min(k, pi, risk):
    return next(n for n in range(k, 10_000) if qbar(n, k, pi) <= risk)


def sha256_of(spec):
    body = {key: value for key, value in spec.items() if key != "digest"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def redigest(spec):
    spec["digest"] = sha256_of(spec)
    return spec


@pytest.fixture(scope="module")
def population():
    rng = np.random.default_rng(13)
    frame = pd.DataFrame(rng.normal(size=(240, 2)) * [10.0, 3.0] + [40.0, 12.0], columns=["age", "hours"])
    frame["pi"] = rng.uniform(0.4, 0.9, len(frame))
    return frame


@pytest.fixture(scope="module")
def constant(population):
    d = design(population, K, PI, RISK, columns=["age", "hours"])
    return d, build_spec(d)


@pytest.fixture(scope="module")
def per_record(population):
    d = design(population, K, "pi", RISK, columns=["age", "hours"])
    return d, build_spec(d, participation_column="pi")


def run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path, spec, name="spec.json"):
    path = tmp_path / name
    path.write_text(json.dumps(spec))
    return path


# ----------------------------------------------------------------- verify: 0, 1, 2 and the digest


def test_verify_prints_the_whole_digest_and_accepts_it_in_any_form(tmp_path, capsys, constant):
    spec = constant[1]
    path = write(tmp_path, spec)
    whole = sha256_of(spec)
    assert len(whole) == 7 + 64
    code, out, err = run(capsys, ["survey", "verify", str(path)])
    assert code == 0 and err == "" and whole in out and "not compared" in out
    hexpart = whole.split(":")[1]
    for given in (whole, whole.upper(), hexpart, hexpart.upper(), f"  SHA256:{hexpart}\n"):
        code, out, err = run(capsys, ["survey", "verify", str(path), "--digest", given])
        assert code == 0 and err == "" and whole in out and "equal to the digest given" in out
    assert verify(spec, expected_digest=hexpart.upper()).digest_confirmed
    assert not verify(spec).digest_confirmed and verify(spec).digest == whole


def test_verify_a_different_published_digest_is_a_failure(tmp_path, capsys, constant):
    spec = constant[1]
    path = write(tmp_path, spec)
    other = "sha256:" + hashlib.sha256(b"the letter says something else").hexdigest()
    code, out, err = run(capsys, ["survey", "verify", str(path), "--digest", other])
    assert code == 1 and err == ""
    assert "NOT valid" in out and other in out and sha256_of(spec) in out
    with pytest.raises(GuaranteeError) as e:
        verify(spec, expected_digest=other)
    assert e.value.digest == sha256_of(spec) and len(e.value.problems) == 1
    # an altered specification whose digest was recomputed is consistent, and only the
    # out-of-band digest catches it
    forged = json.loads(json.dumps(spec))
    forged["function"]["centroids"][0][0] += 1.0
    redigest(forged)
    verify(forged)  # internally intact: the digest alone proves nothing
    code, out, _ = run(capsys, ["survey", "verify", str(write(tmp_path, forged, "forged.json")),
                                "--digest", sha256_of(spec)])
    assert code == 1 and "not the specification that was published" in out


@pytest.mark.parametrize("given", ["sha256:abc", "md5:" + "0" * 64, "0" * 63, "0" * 65, "g" * 64, "",
                                   "sha256:" + "0" * 64 + "0", "sha256 :" + "0" * 64])
def test_verify_refuses_a_malformed_digest(tmp_path, capsys, constant, given):
    path = write(tmp_path, constant[1])
    code, out, err = run(capsys, ["survey", "verify", str(path), "--digest", given])
    assert code == 2 and out == ""
    assert err.startswith("probanon: error: ") and err.count("\n") == 1 and "digest" in err


def test_verify_a_tampered_or_malformed_spec_is_an_error(tmp_path, capsys, constant):
    spec = constant[1]
    tampered = json.loads(json.dumps(spec))
    tampered["cells"][0]["size"] += 1  # digest field no longer matches the content
    for path, extra in [(write(tmp_path, tampered, "t.json"), ["--digest", sha256_of(spec)]),
                        (write(tmp_path, tampered, "t.json"), []),
                        (tmp_path / "missing.json", []),
                        ]:
        code, out, err = run(capsys, ["survey", "verify", str(path), *extra])
        assert code == 2 and out == "" and err.startswith("probanon: error: ") and err.count("\n") == 1
    (tmp_path / "bad.json").write_text("{oops")
    code, _, err = run(capsys, ["survey", "verify", str(tmp_path / "bad.json")])
    assert code == 2 and "not valid JSON" in err


def test_verify_self_contradictory_fields_are_errors_not_failures(tmp_path, capsys, constant):
    spec = constant[1]
    wrong_n_min = json.loads(json.dumps(spec))
    wrong_n_min["guarantee"]["n_min"] += 1
    wrong_failure = json.loads(json.dumps(spec))
    wrong_failure["cells"][0]["failure"] /= 2  # a lie about a safe cell
    for s, fragment in [(wrong_n_min, "n_min"), (wrong_failure, "declared failure")]:
        redigest(s)
        with pytest.raises(SpecificationError, match=fragment) as e:
            verify(s)
        assert not isinstance(e.value, GuaranteeError)
        code, out, err = run(capsys, ["survey", "verify", str(write(tmp_path, s))])
        assert code == 2 and out == "" and fragment in err and err.count("\n") == 1


def test_verify_a_constant_guarantee_that_does_not_hold_is_a_failure(tmp_path, capsys, constant):
    spec = constant[1]
    sizes = [cell["size"] for cell in spec["cells"]]
    failures = np.array([qbar(n, K, PI) for n in sizes])
    assert failures.max() <= RISK
    lower = float(failures.max()) / 2  # a risk the same cells cannot keep
    failing = np.flatnonzero(failures > lower)
    assert failing.size >= 1
    worst = int(np.flatnonzero(np.round(failures, 12) == np.round(failures.max(), 12))[0])
    s = json.loads(json.dumps(spec))
    s["guarantee"]["risk"] = lower
    s["guarantee"]["n_min"] = n_min(K, PI, lower)  # consistent with the new risk
    redigest(s)
    with pytest.raises(GuaranteeError) as e:
        verify(s)
    message = str(e.value)
    assert f"cell {worst} of {sizes[worst]} records" in message
    assert (f"({failing.size} of {len(sizes)} cells exceed it)" in message) == (failing.size > 1)
    code, out, err = run(capsys, ["survey", "verify", str(write(tmp_path, s)), "--digest", sha256_of(s)])
    assert code == 1 and err == "" and "the guarantee does not hold" in out and sha256_of(s) in out


def test_verify_a_per_record_guarantee_that_does_not_hold_is_a_failure(tmp_path, capsys, per_record):
    _, spec = per_record
    failures = np.array([brute_qbar(cell["participation"], K) for cell in spec["cells"]])
    assert failures.max() <= RISK
    lower = float(np.median(failures))
    failing = np.flatnonzero(failures > lower)
    s = json.loads(json.dumps(spec))
    s["guarantee"]["risk"] = lower
    redigest(s)
    worst = int(np.argmax(failures))
    code, out, err = run(capsys, ["survey", "verify", str(write(tmp_path, s))])
    assert code == 1 and err == ""
    assert f"cell {worst} of {spec['cells'][worst]['size']} records" in out
    assert f"({failing.size} of {failures.size} cells exceed it)" in out


# ----------------------------------------------------------------- simulate refuses another population


def test_simulate_accepts_the_design_population(tmp_path, capsys, population, per_record):
    pop = tmp_path / "pop.csv"
    population.to_csv(pop, index=False)
    code, out, _ = run(capsys, ["survey", "simulate", str(write(tmp_path, per_record[1])), str(pop),
                                "--runs", "50", "--seed", "1", "--json"])
    assert code == 0 and json.loads(out)["records"] == len(population)


def _refused(tmp_path, capsys, spec, frame):
    pop = tmp_path / "other.csv"
    frame.to_csv(pop, index=False)
    code, out, err = run(capsys, ["survey", "simulate", str(write(tmp_path, spec)), str(pop), "--runs", "20"])
    assert code == 2 and out == "" and err.startswith("probanon: error: ") and err.count("\n") == 1
    return err


def test_simulate_refuses_a_population_of_another_size(tmp_path, capsys, population, constant):
    err = _refused(tmp_path, capsys, constant[1], population.iloc[:-1])
    assert f"has {len(population) - 1} records but the specification declares {len(population)}" in err


def test_simulate_refuses_a_population_without_the_functions_columns(tmp_path, capsys, population, constant):
    err = _refused(tmp_path, capsys, constant[1], population.drop(columns=["hours"]))
    assert "no column 'hours'" in err


def test_simulate_refuses_a_population_whose_cells_differ(tmp_path, capsys, population, constant):
    d, spec = constant
    labels = d.labels
    j = int(np.flatnonzero(labels != labels[0])[0])
    moved = population.copy()
    moved.loc[0, ["age", "hours"]] = population.loc[j, ["age", "hours"]].to_numpy()  # record 0 joins j's cell
    first = min(labels[0], labels[j])
    declared = spec["cells"][first]["size"]
    found = declared - 1 if first == labels[0] else declared + 1
    err = _refused(tmp_path, capsys, spec, moved)
    assert f"cell {first}: the specification declares {declared} records, the function puts {found}" in err
    assert "2 cells differ" in err
    with pytest.raises(InputError, match=f"cell {first}:"):
        simulate_spec(spec, moved, 10)


def test_simulate_refuses_other_participation_probabilities(tmp_path, capsys, population, per_record):
    d, spec = per_record
    other = population.copy()
    other.loc[5, "pi"] = 0.95 if other.loc[5, "pi"] < 0.9 else 0.5
    err = _refused(tmp_path, capsys, spec, other)
    assert f"cell {d.labels[5]}: the participation probabilities" in err


# ----------------------------------------------------------------- design: progress


def test_design_reports_progress_after_its_checks_and_before_the_kernels(monkeypatch, population):
    events = []
    for name in ("safe_cell_size", "mdav_partition", "_per_record_partition"):
        original = getattr(design_module, name)

        def wrapped(*args, _original=original, _name=name, **kwargs):
            events.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(design_module, name, wrapped)
    design(population, K, PI, RISK, columns=["age", "hours"], progress=increments(events))
    assert events[0] == 0 and events[1] == "safe_cell_size"
    assert sum(e for e in events if isinstance(e, int)) == len(population)
    events.clear()
    design(population, K, "pi", RISK, columns=["age", "hours"], progress=increments(events))
    assert events[:2] == [0, "_per_record_partition"]
    assert sum(e for e in events if isinstance(e, int)) == len(population)
    assert len([e for e in events if isinstance(e, int)]) > 10  # cell by cell
    events.clear()
    for bad in (dict(k=len(population) + 1), dict(risk=0.0), dict(participation=1.5)):
        args = dict(k=K, participation=PI, risk=RISK) | bad
        with pytest.raises(ValueError):
            design(population, args["k"], args["participation"], args["risk"], columns=["age", "hours"],
                   progress=increments(events))
    assert events == []  # refused before any progress: the CLI prints one error line


def test_design_cli_progress_on_stderr_and_quiet(tmp_path, capsys, population):
    pop = tmp_path / "pop.csv"
    population.to_csv(pop, index=False)
    argv = ["survey", "design", str(pop), "-k", str(K), "--participation-column", "pi", "--risk", str(RISK),
            "--columns", "age,hours", "-o", str(tmp_path / "spec.json")]
    code, out, err = run(capsys, argv)
    assert code == 0 and out == ""
    assert err.startswith("survey design: 240 records") and f"{len(population)}/{len(population)}" in err
    (tmp_path / "spec.json").unlink()
    code, out, err = run(capsys, argv + ["--quiet"])
    assert code == 0 and err.count("\n") == 1 and " cells of " in err  # the summary line alone
    bad = tmp_path / "bad.csv"
    population.assign(age=np.where(np.arange(len(population)) == 7, np.nan, population["age"])).to_csv(bad, index=False)
    code, out, err = run(capsys, ["survey", "design", str(bad), "-k", "3", "--participation", "0.6", "--risk", "0.01",
                                  "--columns", "age,hours", "-o", str(tmp_path / "x.json")])
    assert code == 2 and err.startswith("probanon: error: ") and err.count("\n") == 1
