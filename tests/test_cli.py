"""The probanon command: exact forms, outputs, and one-line errors without partial output."""

import io
import json
import os
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from probanon.cli import main


def _table(tmp_path, n=60, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "name": [f"p{i}" for i in range(n)],
        "age": rng.integers(18, 90, n),
        "income": rng.normal(30000, 8000, n).round(2),
        "height": rng.normal(170, 10, n).round(1),
        "secret": rng.normal(size=n),
    })
    path = tmp_path / "in.csv"
    df.to_csv(path, index=False)
    return df, path


def _il(X, Y):
    """Independent IL = 100 SSE/SST with the original's mean and population sd."""
    mu, sd = X.mean(0), X.std(0)
    Zx, Zy = (X - mu) / sd, (Y - mu) / sd
    return 100 * ((Zx - Zy) ** 2).sum() / (Zx**2).sum()


def test_microaggregate_keeps_rows_columns_and_replaces_qis(tmp_path, capsys):
    df, path = _table(tmp_path)
    out = tmp_path / "out.csv"
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "4", "--columns", "age,income",
                 "--confidential", "height,secret", "--drop", "name", "--keep-order"]) == 0
    rel = pd.read_csv(out)
    assert list(rel.columns) == ["age", "income", "height", "secret"]  # the direct identifier is removed
    assert len(rel) == len(df)
    pd.testing.assert_series_equal(rel["height"], df["height"])
    pd.testing.assert_series_equal(rel["secret"], df["secret"])
    groups = rel.groupby(["age", "income"]).size()
    assert groups.min() >= 4
    # each released tuple is the mean of the original records that received it, rounded to the input's decimals
    # (ages written as whole numbers, incomes with at most 2 decimals)
    for _, idx in rel.groupby(["age", "income"]).groups.items():
        mean = df.loc[idx, ["age", "income"]].mean().to_numpy()
        np.testing.assert_allclose(rel.loc[idx, ["age", "income"]].iloc[0], [np.round(mean[0]), np.round(mean[1], 2)],
                                   rtol=1e-12)
    assert rel["age"].dtype == np.int64  # integers stay integers
    err = capsys.readouterr().err
    assert "information loss" in err
    # the summary says what happened to every column
    for column, fate in [("age", "key"), ("income", "key"), ("height", "confidential: kept"),
                         ("secret", "confidential: kept"), ("name", r"removed \(--drop\)$")]:
        assert re.search(rf"^  {column} +{fate}", err, re.M), (column, err)


def test_every_column_needs_a_role(tmp_path, capsys):
    df, path = _table(tmp_path)
    _bad(tmp_path, capsys, ["microaggregate", str(path), "-o", "OUT", "-k", "5"], "--keys")
    _bad(tmp_path, capsys, ["microaggregate", str(path), "-o", "OUT", "-k", "5", "--keys", "age,income"],
         "columns without a role: name, height, secret")
    _bad(tmp_path, capsys, ["microaggregate", str(path), "-o", "OUT", "-k", "5", "--keys", "age,income",
                            "--confidential", "income"], "both key and confidential")
    out = tmp_path / "out.csv"
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "5", "--keys", "age,income", "--drop", "name",
                 "--keep-other", "--keep-order"]) == 0
    rel = pd.read_csv(out)
    assert list(rel.columns) == ["age", "income", "height", "secret"]
    pd.testing.assert_series_equal(rel["secret"], df["secret"])
    assert re.search(r"^  height +other: passed through unchanged", capsys.readouterr().err, re.M)


def test_records_are_shuffled_and_linked(tmp_path, capsys):
    df, path = _table(tmp_path)
    roles = ["--keys", "age,income", "--confidential", "height,secret", "--drop", "name"]
    outs = {}
    for name, seed in [("a", "5"), ("b", "5"), ("c", "6")]:
        out, link = tmp_path / f"{name}.csv", tmp_path / f"{name}_link.csv"
        assert main(["microaggregate", str(path), "-o", str(out), "-k", "4", *roles, "--seed", seed,
                     "--link", str(link)]) == 0
        outs[name] = (pd.read_csv(out), pd.read_csv(link))
    rel, link = outs["a"]
    assert "index" not in rel.columns and "Unnamed: 0" not in rel.columns
    assert sorted(link["original_row"]) == list(range(1, len(df) + 1))
    assert sorted(link["released_row"]) == list(range(1, len(df) + 1))
    # the link file is right: the released row of each original record carries its confidential values
    back = rel.iloc[link["released_row"].to_numpy() - 1].reset_index(drop=True)
    np.testing.assert_array_equal(back["secret"].to_numpy(), df.loc[link["original_row"] - 1, "secret"].to_numpy())
    assert not np.array_equal(rel["secret"].to_numpy(), df["secret"].to_numpy())  # not in input order
    pd.testing.assert_frame_equal(outs["a"][0], outs["b"][0])  # same seed, same release
    assert not outs["a"][0].equals(outs["c"][0])
    assert "never publish" in capsys.readouterr().err


def test_output_never_overwrites_an_input(tmp_path, capsys):
    df, path = _table(tmp_path)
    before = path.read_bytes()
    roles = ["--keys", "age,income", "--keep-other"]
    (tmp_path / "sym.csv").symlink_to(path)
    os.link(path, tmp_path / "hard.csv")
    for target in [path, tmp_path / "sym.csv", tmp_path / "hard.csv", tmp_path / "." / "in.csv"]:
        assert main(["microaggregate", str(path), "-o", str(target), "-k", "5", *roles, "--force"]) == 2
        err = capsys.readouterr().err.strip()
        assert "would overwrite the input" in err and len(err.splitlines()) == 1
        assert path.read_bytes() == before
    out = tmp_path / "out.csv"
    out.write_text("precious\n")
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "5", *roles]) == 2
    assert "--force" in capsys.readouterr().err and out.read_text() == "precious\n"
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "5", *roles, "--force"]) == 0
    assert len(pd.read_csv(out)) == len(df)
    # the link file and the function may not overwrite the input or each other either
    assert main(["microaggregate", str(path), "-o", str(tmp_path / "x.csv"), "-k", "5", *roles,
                 "--link", str(path)]) == 2
    assert main(["microaggregate", str(path), "-o", str(tmp_path / "x.csv"), "-k", "5", *roles,
                 "--link", str(tmp_path / "x.csv")]) == 2
    assert "named twice" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists() and path.read_bytes() == before


@pytest.mark.parametrize("method", ["mdav", "vmdav", "ranking"])
def test_methods_and_evaluate_json(tmp_path, capsys, method):
    df, path = _table(tmp_path)
    out = tmp_path / "out.csv"
    link = tmp_path / "link.csv"
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "3", "--method", method,
                 "--columns", "age,income,height", "--confidential", "secret", "--drop", "name",
                 "--link", str(link), "--seed", "1"]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(path), str(out), "--columns", "age,income,height", "--json", "--link", str(link)]) == 0
    result = json.loads(capsys.readouterr().out)
    rel = pd.read_csv(out).iloc[pd.read_csv(link)["released_row"] - 1].reset_index(drop=True)
    cols = ["age", "income", "height"]
    assert result["n_records"] == len(df)
    assert result["information_loss"] == pytest.approx(_il(df[cols].to_numpy(float), rel[cols].to_numpy(float)), rel=1e-9)
    assert result["k_achieved"] == rel.groupby(cols).size().min()
    if method != "ranking":
        assert result["k_achieved"] >= 3


def test_function_written_and_applied_to_new_records(tmp_path, capsys):
    df, path = _table(tmp_path)
    out, func = tmp_path / "out.csv", tmp_path / "f.json"
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "5", "--columns", "age,income",
                 "--keep-other", "--keep-order", "--function", str(func)]) == 0
    spec = json.loads(func.read_text())
    assert spec["kind"] == "ordered-balls" and spec["columns"] == ["age", "income"]
    applied = tmp_path / "applied.csv"
    assert main(["apply", str(func), str(path), "-o", str(applied), "--keep-other", "--keep-order"]) == 0
    app = pd.read_csv(applied)
    rel = pd.read_csv(out)
    np.testing.assert_array_equal(app[["age", "income"]].to_numpy(), rel[["age", "income"]].to_numpy())
    assert app["cell"].value_counts().min() >= 5
    new = pd.DataFrame({"age": [40, 200], "income": [31000.0, -5.0]})
    new_path = tmp_path / "new.csv"
    new.to_csv(new_path, index=False)
    # two new records are two cells of one record each: below the k = 5 the function promises,
    # so apply refuses to write them (issue 39.1)
    assert main(["apply", str(func), str(new_path), "-o", str(tmp_path / "new_out.csv")]) == 2
    assert "promises 5-anonymity" in capsys.readouterr().err and not (tmp_path / "new_out.csv").exists()


def test_parquet_in_and_out(tmp_path):
    df, _ = _table(tmp_path)
    src = tmp_path / "in.parquet"
    df.to_parquet(src)
    out = tmp_path / "out.parquet"
    assert main(["microaggregate", str(src), "-o", str(out), "-k", "3", "--columns", "age", "--keep-other"]) == 0
    rel = pd.read_parquet(out)
    assert len(rel) == len(df) and rel.groupby("age").size().min() >= 3


def test_constant_column_is_accepted(tmp_path):
    df, path = _table(tmp_path)
    df["const"] = 7
    df.to_csv(path, index=False)
    out = tmp_path / "out.csv"
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "3", "--columns", "age,const", "--keep-other"]) == 0
    assert (pd.read_csv(out)["const"] == 7).all()


def _bad(tmp_path, capsys, argv, fragment):
    out = tmp_path / "out.csv"
    code = main([a.replace("OUT", str(out)) for a in argv])
    err = capsys.readouterr().err.strip()
    assert code != 0
    assert len(err.splitlines()) == 1, err
    assert fragment in err
    assert not out.exists()
    assert not any(p.name.startswith(".out") for p in tmp_path.iterdir())


def test_bad_inputs(tmp_path, capsys):
    df, path = _table(tmp_path)
    n = len(df)
    _bad(tmp_path, capsys, ["microaggregate", str(path), "-o", "OUT", "-k", str(n + 1), "--keys", "age", "--keep-other"], "larger than the number of records")
    assert main(["microaggregate", str(path), "-o", str(tmp_path / "out.csv"), "-k", "0"]) == 2
    assert not (tmp_path / "out.csv").exists()
    err = capsys.readouterr().err.strip()
    assert err.startswith("probanon: error: argument -k: expected a positive integer, got 0") and "\n" not in err
    _bad(tmp_path, capsys, ["microaggregate", str(path), "-o", "OUT", "-k", "3", "--columns", "name", "--keep-other"], "not numeric")
    _bad(tmp_path, capsys, ["microaggregate", str(path), "-o", "OUT", "-k", "3", "--columns", "nope"], "not in the table")
    nan = df.copy()
    nan.loc[5, "income"] = np.nan
    nan.to_csv(tmp_path / "nan.csv", index=False)
    _bad(tmp_path, capsys, ["microaggregate", str(tmp_path / "nan.csv"), "-o", "OUT", "-k", "3", "--keys", "age,income", "--keep-other"], "missing or infinite")
    inf = df.copy()
    inf.loc[5, "income"] = np.inf
    inf.to_csv(tmp_path / "inf.csv", index=False)
    _bad(tmp_path, capsys, ["microaggregate", str(tmp_path / "inf.csv"), "-o", "OUT", "-k", "3", "--keys", "age,income", "--keep-other"], "missing or infinite")
    text = df.astype({"age": object})
    text.loc[3, "age"] = "forty"
    text.to_csv(tmp_path / "text.csv", index=False)
    _bad(tmp_path, capsys, ["microaggregate", str(tmp_path / "text.csv"), "-o", "OUT", "-k", "3", "--keys", "age,income", "--keep-other"], "text in a numeric column")
    (tmp_path / "empty.csv").write_text("")
    _bad(tmp_path, capsys, ["microaggregate", str(tmp_path / "empty.csv"), "-o", "OUT", "-k", "3"], "empty")
    (tmp_path / "header.csv").write_text("a,b\n")
    _bad(tmp_path, capsys, ["microaggregate", str(tmp_path / "header.csv"), "-o", "OUT", "-k", "1"], "no records")
    _bad(tmp_path, capsys, ["microaggregate", str(tmp_path / "missing.csv"), "-o", "OUT", "-k", "3"], "no such file")
    _bad(tmp_path, capsys, ["microaggregate", str(path), "-o", str(tmp_path / "out.xlsx"), "-k", "3", "--keys", "age",
                            "--keep-other"], "unknown output type")
    (tmp_path / "bad.json").write_text("{not json")
    _bad(tmp_path, capsys, ["apply", str(tmp_path / "bad.json"), str(path), "-o", "OUT"], "not valid JSON")
    (tmp_path / "other.json").write_text('{"kind": "ordered-balls"}')
    _bad(tmp_path, capsys, ["apply", str(tmp_path / "other.json"), str(path), "-o", "OUT"], "not a probanon function")


def test_console_script_runs_and_fails_cleanly(tmp_path):
    df, path = _table(tmp_path)
    exe = [sys.executable, "-m", "probanon.cli"]
    roles = ["--keys", "age,income", "--keep-other"]
    ok = subprocess.run(exe + ["microaggregate", str(path), "-o", str(tmp_path / "o.csv"), "-k", "3", *roles],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    bad = subprocess.run(exe + ["microaggregate", str(path), "-o", str(tmp_path / "p.csv"), "-k", "1000", *roles],
                         capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr.strip().startswith("probanon: error:") and len(bad.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "p.csv").exists()


def _html_table(page: str) -> pd.DataFrame:
    """The first table of an HTML page (independent of probanon's writer)."""
    table = re.search(r"<table>(.*?)</table>", page, re.S).group(1)
    head = re.findall(r"<th>(.*?)</th>", table)
    body = [re.findall(r"<td>(.*?)</td>", r) for r in re.findall(r"<tr>(.*?)</tr>", table)[1:]]
    return pd.read_csv(io.StringIO("\n".join(",".join(r) for r in [head, *body])))


def _check_demo_risk(folder, page, release):
    """The demo's risk section (issue 14): the attack suite on the MDAV k = 5 release, its JSON in the
    folder, each success beside the claimed bound 1/5 with a red, marked cell when its 99%
    Clopper-Pearson interval (recomputed with scipy) lies entirely above it, and the guarantee's scope."""
    import html

    from scipy import stats

    from probanon.attacks import GUARANTEES
    from probanon.data import synthetic_survey

    qi = ["age", "income", "household", "hours"]
    report = json.loads((folder / "attack_mdav_k5.json").read_text())
    assert (report["mechanism"], report["k"], report["bound"]) == ("microaggregation", 5, 0.2)
    assert report["keys"] == qi and report["confidential"] == ["health_spending", "savings"]
    assert [r["rule"] for r in report["results"]] == ["exact tuple", "nearest record", "learned likelihood",
                                                      "deterministic relation"]
    for r in report["results"]:
        assert r["trials"] == 300 and r["rate"] == pytest.approx(r["successes"] / 300)
        ci = stats.binomtest(r["successes"], 300).proportion_ci(0.99, method="exact")
        assert r["interval"] == pytest.approx([ci.low, ci.high])
        assert r["lower_exceeds_bound"] == (ci.low > 0.2)
    # released keys are centroids: a target whose tuple is not in the release is never linked exactly
    original = synthetic_survey(300, random_state=2026)[qi]
    published = set(map(tuple, release[qi].to_numpy()))
    assert not any(t in published for t in map(tuple, original.to_numpy()))
    assert report["results"][0]["successes"] == 0
    section = page[page.index("Risk of the release at k = 5"):]
    assert html.escape(GUARANTEES["microaggregation"].text()) in section
    table = re.search(r"<table>(.*?)</table>", section, re.S).group(1)
    cells = re.findall(r"<tr>(.*?)</tr>", table)[1:]
    assert len(cells) == 4
    for row, r in zip(cells, report["results"]):
        assert "<td>0.2000 (1/5)</td>" in row
        assert ('<td class="above">' in row) == r["lower_exceeds_bound"] == (" ABOVE</td>" in row)


def _check_demo_links(folder, page, release):
    """Issue 39, point 12: the index links to the release reports, every relative link resolves to a
    file the demo wrote, and the external report lists every released column with its treatment."""
    links = re.findall(r'<a href="([^"]+)"', page)
    assert {"release_report/internal/index.html", "release_report/external/index.html"} <= set(links)
    assert all((folder / link).is_file() for link in links if "://" not in link)
    external = (folder / "release_report" / "external" / "index.html").read_text()
    rows = dict(re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", external))
    assert set(release.columns) <= set(rows) and rows["id"] == "removed (--drop)"
    assert "release_mdav_k5.csv" in external and f"{len(release):,} records" in external


def test_demo_writes_report(tmp_path):
    assert main(["demo", "--output-dir", str(tmp_path / "rep"), "--records", "300", "--quiet"]) == 0
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "Information loss against k" in page and "data:image/png;base64," in page
    png = (tmp_path / "rep" / "il_vs_k.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    ev = json.loads((tmp_path / "rep" / "evaluation_mdav_k5.json").read_text())
    assert ev["k_achieved"] >= 5 and 0 < ev["information_loss"] < 100 and 0 < ev["record_linkage"] < 1
    # risk beside utility: k achieved and record linkage per method; ranking is not offered as best
    rows = _html_table(page)
    assert {"k achieved", "record linkage", "k-anonymous"} <= set(rows.columns)
    ranking = rows[rows["method"] == "individual ranking"]
    assert (ranking["k-anonymous"] == "NO").all() and (ranking["k achieved"] == 1).all()
    mdav = rows[rows["method"] == "MDAV"]
    assert (mdav["k achieved"] >= mdav["k"]).all()
    assert ranking["record linkage"].min() > mdav["record linkage"].max()
    assert "never as a method to choose" in page
    release = pd.read_csv(tmp_path / "rep" / "release_mdav_k5.csv")
    assert "id" not in release.columns  # the direct identifier is not published
    _check_demo_links(tmp_path / "rep", page, release)
    _check_demo_risk(tmp_path / "rep", page, release)
    # the survey part (issue 15): a collector run whose release holds only cells of >= k responses
    survey = json.loads((tmp_path / "rep" / "survey_release_report.json").read_text())
    survey_release = pd.read_csv(tmp_path / "rep" / "survey_release.csv")
    assert "Survey with uncertain participation (paper 1)" in page and survey["responses"] > 0
    assert survey_release["cell"].value_counts().min() >= survey["k"] == 5
    assert len(survey_release) == survey["released_records"] == survey["responses"] - survey["suppressed_records"]
    assert main(["demo", "--output-dir", str(tmp_path / "rep"), "--records", "300", "--quiet"]) == 2  # exists
    assert main(["demo", "--output-dir", str(tmp_path / "rep" / "index.html"), "--quiet"]) == 2  # a file


def test_outputs_are_all_or_nothing(tmp_path, capsys):
    df, path = _table(tmp_path)
    out = tmp_path / "out.csv"
    # the function cannot be written: the release must not be left behind either
    roles = ["--keys", "age,income", "--keep-other"]
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "3", *roles,
                 "--function", str(tmp_path / "no" / "f.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"probanon: error: {tmp_path / 'no' / 'f.json'}: the folder {tmp_path / 'no'} does not exist"
    assert not out.exists() and not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())
    assert main(["microaggregate", str(path), "-o", str(tmp_path / "no" / "out.csv"), "-k", "3", *roles]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    (tmp_path / "folder").mkdir()
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "3", *roles, "--function", str(tmp_path / "folder")]) == 2
    assert "is a folder" in capsys.readouterr().err and not out.exists()
    # a failure while writing (after the checks) leaves nothing either
    from probanon import outputs

    real = outputs.os.replace
    calls = []

    def flaky(a, b):
        calls.append(b)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(a, b)

    outputs.os.replace = flaky
    try:
        assert main(["microaggregate", str(path), "-o", str(out), "-k", "3", *roles,
                     "--function", str(tmp_path / "f.json")]) == 2
    finally:
        outputs.os.replace = real
    assert "No space left" in capsys.readouterr().err
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00")
    out.unlink(missing_ok=True)
    assert main(["apply", str(tmp_path / "bin.json"), str(path), "-o", str(out), "--keep-other"]) == 2
    assert "not UTF-8" in capsys.readouterr().err


def test_estimator_keeps_its_parameters():
    from probanon.microagg import MDAV

    m = MDAV(k=3.0).fit(np.random.default_rng(0).normal(size=(20, 2)))
    assert m.get_params()["k"] == 3.0 and m.k_ == 3


@pytest.mark.parametrize("init", ["mdav", "pca", "auto"])
def test_pcl_with_each_start(tmp_path, capsys, init):
    df, path = _table(tmp_path, n=1200)
    out, func = tmp_path / "out.csv", tmp_path / "f.json"
    cols = ["age", "income"]
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "300", "--method", "pcl", "--init", init,
                 "--columns", ",".join(cols), "--keep-other", "--function", str(func)]) == 0
    rel = pd.read_csv(out)
    assert rel.groupby(cols).size().min() >= 300
    assert json.loads(func.read_text())["kind"] == "power-diagram"
    assert main(["microaggregate", str(path), "-o", str(tmp_path / "x.csv"), "-k", "300", "--method", "pcl",
                 "--init", "kmeans"]) == 2
    assert "--init" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()
