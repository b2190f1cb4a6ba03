"""The workbench's HTTP API without a browser (issue 44): the token on every request, the Host check,
the headers of an offline page, bad input refused with the command line's message and nothing
changed, two tabs, unlimited undo/redo, uploads limited, cancelling, a recipe continued, and the
address rule. Plus the command line's ``--prepare``, which the workbench's recipes use."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import SHARED_DATA

pytest.importorskip("fastapi")

from probanon.errors import ParameterError  # noqa: E402
from probanon.workbench.server import check_exposure, running  # noqa: E402

CENSUS = SHARED_DATA / "casc" / "census.csv"
KEYS = ["AFNLWGT", "AGI", "EMCONTRB"]


def call(base, method, path, body=None, token=None, raw=None, headers=None):
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    h = dict(headers or {})
    if token:
        h["Authorization"] = f"Bearer {token}"
    if body is not None:
        h.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(base + path, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            status, payload, ctype, hdrs = r.status, r.read(), r.headers.get("content-type", ""), r.headers
    except urllib.error.HTTPError as e:
        status, payload, ctype, hdrs = e.code, e.read(), e.headers.get("content-type", ""), e.headers
    return status, (json.loads(payload) if ctype.startswith("application/json") else payload), hdrs


def finished(base, token, job, timeout=300):
    deadline = time.monotonic() + timeout
    while job["status"] == "running" and time.monotonic() < deadline:
        time.sleep(0.05)
        job = call(base, "GET", f"/api/jobs/{job['id']}", token=token)[1]
    assert job["status"] != "running", "job did not end in time"
    return job


@pytest.fixture
def wb(tmp_path):
    with running(folder=tmp_path / "session", seed=3) as (base, token, bench):
        yield base, token, bench


def opened(base, token, path=CENSUS):
    version = call(base, "GET", "/api/session", token=token)[1]["version"]
    status, job, _ = call(base, "POST", "/api/open", {"path": str(path), "version": version}, token)
    assert status == 200, job
    assert finished(base, token, job)["status"] == "done"
    return call(base, "GET", "/api/session", token=token)[1]


def census_roles(columns):
    return {c: "key" if c in KEYS else "confidential" for c in columns}


def test_token_on_every_request_and_host_checked(wb):
    base, token, _ = wb
    assert call(base, "GET", "/")[0] == 403
    assert call(base, "GET", "/?token=wrong")[0] == 403
    assert call(base, "GET", "/static/workbench.js")[0] == 403
    assert call(base, "GET", "/api/session")[0] == 403
    assert call(base, "GET", "/api/session", token="x" * 43)[0] == 403
    status, page, headers = call(base, "GET", f"/?token={token}")
    assert status == 200 and b"probanon workbench" in page
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    # the cookie serves the page's files, never the API (another site cannot drive it through the browser)
    jar = {"Cookie": cookie.split(";")[0]}
    assert call(base, "GET", "/static/workbench.js", headers=jar)[0] == 200
    assert call(base, "GET", "/api/session", headers=jar)[0] == 403
    assert call(base, "GET", "/api/session", token=token, headers={"Host": "evil.example:80"})[0] == 400
    assert call(base, "GET", "/api/openapi.json", token=token)[0] == 200
    assert call(base, "GET", "/docs", token=token)[0] == 404  # no page that loads code from a CDN


def test_page_is_offline_and_locked_down(wb):
    base, token, _ = wb
    _, page, headers = call(base, "GET", f"/?token={token}")
    csp = headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert headers["x-content-type-options"] == "nosniff"
    static = Path(__file__).resolve().parents[1] / "probanon" / "workbench" / "static"
    for f in static.iterdir():
        text = f.read_text(encoding="utf-8")
        assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", text), f"{f.name} loads an external resource"
        assert "<script>" not in text and " style=" not in text, f"{f.name}: inline code the CSP forbids"
    assert token.encode() in page  # the page calls the API with it


def test_bad_input_changes_nothing(wb):
    base, token, bench = wb
    s = opened(base, token)
    version = s["version"]
    status, err, _ = call(base, "POST", "/api/prepare", {"step": {"kind": "intervals", "column": "nope", "width": 5},
                                                          "version": version}, token)
    assert status == 400 and err["detail"] == "intervals step: column 'nope' is not in the table"
    status, err, _ = call(base, "POST", "/api/roles", {"roles": {"AGI": "boss"}, "version": version}, token)
    assert status == 400 and "unknown role 'boss'" in err["detail"]
    status, err, _ = call(base, "POST", "/api/apply", {"method": "mdav", "params": {"k": "five"}, "version": version},
                          token)
    assert status == 400 and err == {"detail": "k: expected a number, got 'five'", "field": "k"}
    status, err, _ = call(base, "POST", "/api/apply", {"method": "mdav", "params": {"k": 3}, "version": version}, token)
    assert status == 400 and err["detail"].startswith("no key variables")  # no roles yet: the command line's words
    status, err, _ = call(base, "POST", "/api/open", {"path": "/no/such/file.csv", "version": version}, token)
    assert status == 400 and err["detail"].startswith("path: ") and "no such file" in err["detail"]
    status, err, _ = call(base, "POST", "/api/roles", raw=b"roles=1", token=token,
                          headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 415
    after = call(base, "GET", "/api/session", token=token)[1]
    assert after["version"] == version and after["prepare"] == [] and after["roles"] == {}
    assert after["file"]["path"] == str(CENSUS.resolve())


def test_two_tabs_cannot_overwrite_each_other(wb):
    base, token, _ = wb
    s = opened(base, token)
    columns, version = s["file"]["columns"], s["version"]
    first = call(base, "POST", "/api/roles", {"roles": census_roles(columns), "version": version}, token)
    second = call(base, "POST", "/api/roles", {"roles": {c: "keep" for c in columns}, "version": version}, token)
    assert first[0] == 200 and second[0] == 409
    assert "another tab" in second[1]["detail"]
    assert call(base, "GET", "/api/session", token=token)[1]["roles"] == census_roles(columns)


def test_undo_and_redo_without_limit(wb):
    base, token, _ = wb
    s = opened(base, token)
    v = s["version"]
    widths = [1000, 2000, 5000, 10000, 20000, 50000]
    for w in widths:
        status, s, _ = call(base, "POST", "/api/prepare", {"step": {"kind": "round", "column": "PTOTVAL", "base": w},
                                                           "version": v}, token)
        assert status == 200
        v = s["version"]
    for n in range(len(widths), 0, -1):
        s = call(base, "POST", "/api/undo", {"version": v}, token)[1]
        v = s["version"]
        assert len(s["prepare"]) == n - 1
    assert call(base, "POST", "/api/undo", {"version": v}, token)[1]["detail"] == "nothing to undo"
    for n in range(1, len(widths) + 1):
        s = call(base, "POST", "/api/redo", {"version": v}, token)[1]
        v = s["version"]
        assert [st["base"] for st in s["prepare"]] == widths[:n]
    page = call(base, "GET", "/api/table?offset=0&limit=5", token=token)[1]
    column = page["columns"].index("PTOTVAL") + 1
    original = pd.read_csv(CENSUS)["PTOTVAL"].head(5)
    expected = [50000 * np.floor(x / 50000 + 0.5) for x in
                [20000 * np.floor(y / 20000 + 0.5) for y in
                 [10000 * np.floor(z / 10000 + 0.5) for z in
                  [5000 * np.floor(a / 5000 + 0.5) for a in
                   [2000 * np.floor(b / 2000 + 0.5) for b in
                    [1000 * np.floor(c / 1000 + 0.5) for c in original]]]]]]
    assert [row[column] for row in page["rows"]] == expected


def test_upload_limited_and_validated(tmp_path):
    with running(folder=tmp_path / "session", max_upload_mb=0.01) as (base, token, bench):
        big = b"a,b\n" + b"1,2\n" * 5000
        status, err, _ = call(base, "POST", "/api/upload?name=big.csv&version=0", raw=big, token=token,
                              headers={"Content-Type": "application/octet-stream"})
        assert status == 413 and err["field"] == "file"
        status, err, _ = call(base, "POST", "/api/upload?name=notes.txt&version=0", raw=b"x", token=token,
                              headers={"Content-Type": "application/octet-stream"})
        assert status == 400 and err["field"] == "file"
        assert err["detail"].startswith("file: notes.txt: unknown file type '.txt'")
        status, err, _ = call(base, "POST", "/api/upload?name=..%2Fx.csv&version=0", raw=b"a\n1\n", token=token,
                              headers={"Content-Type": "application/octet-stream"})
        assert status == 400 and err["field"] == "file"
        assert not any(p.is_file() for p in (bench.folder / "uploads").rglob("*"))  # nothing kept
        small = "x;y\n1,5;a\n2,5;b\n".encode("cp1252")
        status, job, _ = call(base, "POST", "/api/upload?name=semi.csv&version=0", raw=small, token=token,
                              headers={"Content-Type": "application/octet-stream"})
        assert status == 200 and finished(base, token, job)["status"] == "done"
        s = call(base, "GET", "/api/session", token=token)[1]
        assert s["file"]["csv"]["sep"] == ";" and s["file"]["columns"] == ["x", "y"] and s["file"]["uploaded"]


def test_cancelled_release_leaves_nothing(wb):
    base, token, bench = wb
    s = opened(base, token)
    s = call(base, "POST", "/api/roles", {"roles": census_roles(s["file"]["columns"]), "version": s["version"]},
             token)[1]
    status, job, _ = call(base, "POST", "/api/apply", {"method": "pcl", "params": {"k": 5}, "version": s["version"]},
                          token)
    assert status == 200
    call(base, "POST", f"/api/jobs/{job['id']}/cancel", token=token)
    job = finished(base, token, job, timeout=60)
    assert job["status"] == "cancelled"
    after = call(base, "GET", "/api/session", token=token)[1]
    assert after["strategies"] == [] and after["version"] == s["version"]
    assert not list(bench.folder.glob("strategies/*/release.csv"))


def test_export_then_continue_from_the_recipe(wb, tmp_path):
    base, token, bench = wb
    s = opened(base, token)
    s = call(base, "POST", "/api/prepare", {"step": {"kind": "top", "column": "PTOTVAL", "quantile": 0.95},
                                            "version": s["version"]}, token)[1]
    s = call(base, "POST", "/api/roles", {"roles": census_roles(s["file"]["columns"]), "version": s["version"]},
             token)[1]
    job = call(base, "POST", "/api/apply", {"method": "mdav", "params": {"k": 4, "seed": 99}, "version": s["version"]},
               token)[1]
    job = finished(base, token, job)
    assert job["status"] == "done", job["error"]
    s = call(base, "GET", "/api/session", token=token)[1]
    folder = tmp_path / "out"
    job = call(base, "POST", "/api/export", {"strategy": job["result"]["strategy"], "folder": str(folder),
                                             "name": "census.parquet", "version": s["version"]}, token)[1]
    job = finished(base, token, job)
    assert job["status"] == "done", job["error"]
    exported = pd.read_parquet(folder / "census.parquet")
    assert exported.groupby(KEYS).size().min() >= 4
    # exporting again without 'overwrite' is refused, beside the folder
    again = finished(base, token, call(base, "POST", "/api/export", {"strategy": 1, "folder": str(folder),
                                                                      "name": "census.parquet",
                                                                      "version": s["version"]}, token)[1])
    assert again["status"] == "failed" and again["field"] == "folder"
    with running(folder=tmp_path / "second") as (base2, token2, bench2):
        job = call(base2, "POST", "/api/recipe/open", {"path": str(folder / "recipe.toml"), "version": 0}, token2)[1]
        job = finished(base2, token2, job)
        assert job["status"] == "done", job["error"]
        s2 = call(base2, "GET", "/api/session", token=token2)[1]
        assert s2["prepare"] == s["prepare"] and s2["roles"] == s["roles"]
        assert s2["strategies"][0]["seed"] == 99
        first = Path(bench.state.strategies[0].folder) / "release.csv"
        assert (Path(bench2.state.strategies[0].folder) / "release.csv").read_bytes() == first.read_bytes()


def test_listening_beyond_loopback_needs_tls_or_the_proxy(tmp_path):
    check_exposure("127.0.0.1")
    check_exposure("::1")
    with pytest.raises(ParameterError, match="needs TLS"):
        check_exposure("0.0.0.0")
    check_exposure("0.0.0.0", behind_proxy=True)
    with pytest.raises(ParameterError, match="go together"):
        check_exposure("0.0.0.0", certfile="c.pem")
    done = subprocess.run([sys.executable, "-m", "probanon.cli", "workbench", "--host", "0.0.0.0", "--no-browser"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "needs TLS" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_prepare_option_equals_recoding_the_file_first(tmp_path):
    """``--prepare`` gives the release of the file recoded beforehand (pandas by hand here)."""
    frame = pd.read_csv(CENSUS)
    steps = [{"kind": "missing", "column": "FICA", "values": [0]},
             {"kind": "top", "column": "PTOTVAL", "threshold": 100000},
             {"kind": "combine", "column": "band", "columns": ["FICA"], "sep": "/"}]
    (tmp_path / "prep.json").write_text(json.dumps(steps))
    by_hand = frame.copy()
    by_hand["FICA"] = by_hand["FICA"].where(by_hand["FICA"] != 0)
    by_hand["PTOTVAL"] = np.where(by_hand["PTOTVAL"] > 100000, 100000, by_hand["PTOTVAL"])
    by_hand["band"] = by_hand["FICA"].map(lambda v: None if pd.isna(v) else str(int(v)))
    by_hand.to_csv(tmp_path / "by_hand.csv", index=False)
    common = ["-k", "5", "--keys", ",".join(KEYS), "--keep-other", "--seed", "4"]
    a = subprocess.run([sys.executable, "-m", "probanon.cli", "microaggregate", str(CENSUS), "-o",
                        str(tmp_path / "a.csv"), "--prepare", str(tmp_path / "prep.json"), *common],
                       capture_output=True, text=True, timeout=300)
    b = subprocess.run([sys.executable, "-m", "probanon.cli", "microaggregate", str(tmp_path / "by_hand.csv"), "-o",
                        str(tmp_path / "b.csv"), *common], capture_output=True, text=True, timeout=300)
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    left, right = pd.read_csv(tmp_path / "a.csv"), pd.read_csv(tmp_path / "b.csv")
    pd.testing.assert_frame_equal(left, right, check_dtype=False)
    bad = subprocess.run([sys.executable, "-m", "probanon.cli", "microaggregate", str(CENSUS), "-o",
                          str(tmp_path / "c.csv"), "--prepare", str(tmp_path / "missing.json"), *common],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and not (tmp_path / "c.csv").exists()
    assert len(bad.stderr.strip().splitlines()) == 1


def test_demo_starts_on_loopback_with_the_built_in_census(tmp_path):
    """``probanon workbench --demo --no-browser`` prints its address (with the token) and serves the
    built-in census; Ctrl-C stops it."""
    import signal

    proc = subprocess.Popen([sys.executable, "-m", "probanon.cli", "workbench", "--demo", "--no-browser",
                             "--folder", str(tmp_path / "s")], stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        deadline = time.monotonic() + 60
        while "probanon workbench on" not in line and time.monotonic() < deadline:
            line = proc.stderr.readline()
        found = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=([\w-]+)", line)
        assert found, line
        base, token = found.groups()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            s = call(base, "GET", "/api/session", token=token)[1]
            if s["file"]["loaded"]:
                break
            time.sleep(0.1)
        assert s["file"]["name"] == "census.csv" and s["file"]["records"] == 1080
        assert call(base, "GET", f"/?token={token}")[0] == 200
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) in (0, 130)  # 130: stopped by Ctrl-C, as every command


def test_progress_lines_for_the_workbench(tmp_path):
    """Under PROBANON_PROGRESS=json a command's progress is JSON lines (what the workbench's bar reads)."""
    import os

    done = subprocess.run([sys.executable, "-m", "probanon.cli", "microaggregate", str(CENSUS), "-o",
                           str(tmp_path / "r.csv"), "-k", "3", "--keys", ",".join(KEYS), "--keep-other"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PROBANON_PROGRESS": "json"})
    assert done.returncode == 0, done.stderr
    lines = [json.loads(ln)["progress"] for ln in done.stderr.splitlines() if ln.startswith('{"progress"')]
    assert lines and all(isinstance(s, str) and isinstance(d, int) for s, d, _ in lines)
    assert "\r" not in done.stderr and "it/s" not in done.stderr  # no bar
    assert all(ln.startswith('{"progress"') or '{"progress"' not in ln for ln in done.stderr.splitlines())


def test_spss_upload_keeps_its_labels(wb, tmp_path):
    pyreadstat = pytest.importorskip("pyreadstat")
    frame = pd.DataFrame({"region": [1.0, 2.0, 1.0, 3.0, 2.0, 1.0], "income": [10.5, 20.0, 30.0, 12.0, 8.0, 9.0]})
    path = tmp_path / "survey.sav"
    pyreadstat.write_sav(frame, str(path), variable_value_labels={"region": {1.0: "north", 2.0: "south", 3.0: "east"}})
    base, token, _ = wb
    status, job, _ = call(base, "POST", "/api/upload?name=survey.sav&version=0", raw=path.read_bytes(), token=token,
                          headers={"Content-Type": "application/octet-stream"})
    assert status == 200 and finished(base, token, job)["status"] == "done"
    summaries = call(base, "GET", "/api/columns", token=token)[1]["summaries"]
    region = next(s for s in summaries if s["name"] == "region")
    assert region["type"] == "coded"
    assert {(c["value"], c["label"], c["count"]) for c in region["categories"]} == {(1, "north", 3), (2, "south", 2),
                                                                                    (3, "east", 1)}


def test_audit_findings_name_their_column(wb, tmp_path):
    """The pre-release audit of the roles (the command line's): a key that a released column
    determines (age = 2020 - birth_year) is found and named."""
    rng = np.random.default_rng(5)
    age = rng.integers(18, 90, 400)
    frame = pd.DataFrame({"age": age, "region": rng.choice(["n", "s", "e"], 400), "birth_year": 2020 - age,
                          "income": rng.normal(3000, 500, 400).round(2)})
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    base, token, _ = wb
    s = opened(base, token, path)
    roles = {"age": "key", "region": "categorical key", "birth_year": "confidential", "income": "confidential"}
    call(base, "POST", "/api/roles", {"roles": roles, "version": s["version"]}, token)
    found = call(base, "GET", "/api/audit", token=token)[1]["findings"]
    assert any(f["column"] == "age" and "birth_year" in f["text"] for f in found), found


def test_risk_before_with_weights_and_households(wb, tmp_path):
    """The Risk step's figures against pandas: sample uniques, k achieved, the weighted class
    totals F_k of the records most at risk, the number of households."""
    rng = np.random.default_rng(8)
    n = 300
    frame = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "region": rng.choice(list("abcdefgh"), n),
                          "age": rng.integers(18, 30, n), "w": rng.uniform(1, 50, n).round(3),
                          "hid": np.repeat(np.arange(100), 3), "income": rng.normal(3000, 500, n).round(2)})
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    base, token, _ = wb
    s = opened(base, token, path)
    roles = {"sex": "categorical key", "region": "categorical key", "age": "categorical key", "w": "weight",
             "hid": "household", "income": "confidential"}
    s = call(base, "POST", "/api/roles", {"roles": roles, "version": s["version"]}, token)[1]
    job = finished(base, token, call(base, "POST", "/api/risk", {"k": 2}, token)[1])
    assert job["status"] == "done", job["error"]
    r = job["result"]
    keys = ["sex", "region", "age"]
    sizes = frame.groupby(keys)["w"].transform("size")
    totals = frame.groupby(keys)["w"].transform("sum")
    assert r["sample_uniques"] == int((sizes == 1).sum())
    assert r["k_achieved"] == int(sizes.min())
    assert r["household_risk"]["households"] == 100
    columns = r["most_at_risk"]["columns"]
    for row in r["most_at_risk"]["rows"]:
        record = row[0] - 1
        assert row[columns.index("fk")] == sizes[record]
        assert row[columns.index("Fk")] == pytest.approx(totals[record], rel=1e-9)



def applied(base, token, method="mdav", **params):
    s = call(base, "GET", "/api/session", token=token)[1]
    job = call(base, "POST", "/api/apply", {"method": method, "params": params, "version": s["version"]}, token)[1]
    assert "id" in job, job
    return finished(base, token, job)


def exported(base, token, number, folder, name="release.csv", force=False):
    s = call(base, "GET", "/api/session", token=token)[1]
    job = call(base, "POST", "/api/export", {"strategy": number, "folder": str(folder), "name": name, "force": force,
                                             "version": s["version"]}, token)[1]
    return finished(base, token, job) if "id" in job else job


def test_export_is_the_strategy_made_whatever_the_roles_now(wb, tmp_path):
    """Roles changed after a strategy do not change its export (a key turned 'keep' is still masked,
    a dropped column still dropped), and an export never replaces a file unless told to."""
    base, token, bench = wb
    s = opened(base, token)
    roles = census_roles(s["file"]["columns"]) | {"PTOTVAL": "drop"}
    s = call(base, "POST", "/api/roles", {"roles": roles, "version": s["version"]}, token)[1]
    job = applied(base, token, k=3)
    assert job["status"] == "done", job["error"]
    number = job["result"]["strategy"]
    later = roles | {"PTOTVAL": "keep", "AGI": "keep"}
    call(base, "POST", "/api/roles", {"roles": later, "version": s["version"] + 1}, token)
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "link.csv").write_text("old")
    job = exported(base, token, number, folder)
    assert job["status"] == "failed" and job["field"] == "folder" and "already holds link.csv" in job["error"]
    assert (folder / "link.csv").read_text() == "old" and sorted(p.name for p in folder.iterdir()) == ["link.csv"]
    job = exported(base, token, number, folder, force=True)
    assert job["status"] == "done", job["error"]
    release = pd.read_csv(folder / "release.csv")
    assert "PTOTVAL" not in release.columns
    assert release.groupby(KEYS).size().min() >= 3
    strategy_release = Path(bench.state.strategies[0].folder) / "release.csv"
    assert strategy_release.read_bytes() == (folder / "release.csv").read_bytes()


def test_names_the_command_line_cannot_take_are_refused(wb, tmp_path):
    frame = pd.DataFrame({"a": [1, 2, 3, 4] * 5, "b": [5, 6, 7, 8] * 5, "a,b": [f"SSN-{i}" for i in range(20)],
                          "x": np.arange(20.0)})
    path = tmp_path / "commas.csv"
    frame.to_csv(path, index=False)
    base, token, _ = wb
    s = opened(base, token, path)
    roles = {"a": "keep", "b": "keep", "a,b": "drop", "x": "key"}
    s = call(base, "POST", "/api/roles", {"roles": roles, "version": s["version"]}, token)[1]
    status, err, _ = call(base, "POST", "/api/apply", {"method": "mdav", "params": {"k": 2}, "version": s["version"]},
                          token)
    assert status == 400 and err["detail"].startswith("column 'a,b': a name with a comma")
    assert call(base, "GET", "/api/session", token=token)[1]["strategies"] == []


def test_a_changed_file_is_refused_not_released(wb, tmp_path):
    path = tmp_path / "census.csv"
    path.write_bytes(CENSUS.read_bytes())
    base, token, _ = wb
    s = opened(base, token, path)
    call(base, "POST", "/api/roles", {"roles": census_roles(s["file"]["columns"]), "version": s["version"]}, token)
    assert applied(base, token, k=3)["status"] == "done"
    frame = pd.read_csv(path)
    frame.assign(ssn=[f"ssn-{i}" for i in range(len(frame))]).to_csv(path, index=False)
    job = exported(base, token, 1, tmp_path / "out")
    assert job["status"] == "failed" and "is not the file this recipe was resolved for" in job["error"]
    assert not (tmp_path / "out" / "release.csv").exists()


def test_recipes_the_workbench_cannot_set_are_refused_before_anything_changes(wb, tmp_path):
    base, token, _ = wb
    s = opened(base, token)
    before = call(base, "GET", "/api/session", token=token)[1]
    recipe = tmp_path / "ordinal.toml"
    recipe.write_text(f'command = "microaggregate"\ninput = "{CENSUS}"\noutput = "o.csv"\n[options]\nk = 3\n'
                      'keys = ["AGI"]\nordinal = ["FICA"]\nkeep_other = true\n')
    status, err, _ = call(base, "POST", "/api/recipe/open", {"path": str(recipe), "version": s["version"]}, token)
    assert status == 400 and "option 'ordinal'" in err["detail"]
    recipe.write_text(f'command = "microaggregate"\ninput = "{CENSUS}"\noutput = "o.csv"\n[options]\nk = 1\n'
                      'keys = ["AGI"]\nkeep_other = true\n')
    status, err, _ = call(base, "POST", "/api/recipe/open", {"path": str(recipe), "version": s["version"]}, token)
    assert status == 400 and "k: must be at least 2" in err["detail"]
    after = call(base, "GET", "/api/session", token=token)[1]
    assert after["version"] == before["version"] and after["roles"] == before["roles"] == {}


def test_a_resolved_recipe_with_a_preparation_continues(wb, tmp_path):
    """The resolved recipe (every option, defaults included) of an export whose nominal key was
    recoded to intervals: its report is made from the prepared table, and it can be opened again."""
    base, token, bench = wb
    s = opened(base, token)
    s = call(base, "POST", "/api/prepare", {"step": {"kind": "intervals", "column": "FICA", "width": 1000},
                                            "version": s["version"]}, token)[1]
    roles = census_roles(s["file"]["columns"]) | {"FICA": "categorical key"}
    s = call(base, "POST", "/api/roles", {"roles": roles, "version": s["version"]}, token)[1]
    job = applied(base, token, k=5, seed=7, accept_risk=True)  # wages give FICA back: the audit says so
    assert job["status"] == "done", job["error"]
    job = exported(base, token, job["result"]["strategy"], tmp_path / "out", name="c.csv")
    assert job["status"] == "done", job["error"]
    assert (tmp_path / "out" / "report" / "internal" / "index.html").is_file()
    with running(folder=tmp_path / "second") as (base2, token2, bench2):
        job = call(base2, "POST", "/api/recipe/open", {"path": str(tmp_path / "out" / "c.csv.recipe.toml"),
                                                       "version": 0}, token2)[1]
        assert finished(base2, token2, job)["status"] == "done"
        again = Path(bench2.state.strategies[0].folder) / "release.csv"
        assert again.read_bytes() == (tmp_path / "out" / "c.csv").read_bytes()


def test_malformed_requests_are_one_line_400s(wb):
    base, token, _ = wb
    s = opened(base, token)
    for path, body in (("/api/roles", {"roles": {"AGI": ["key"]}, "version": s["version"]}),
                       ("/api/roles", {"roles": {"AGI": "key"}, "version": "latest"}),
                       ("/api/prepare", {"step": {"kind": "round", "column": ["AGI"], "base": 5}, "version": s["version"]}),
                       ("/api/open", {"path": str(CENSUS), "encoding": "no-such-codec", "version": s["version"]}),
                       ("/api/open", {"path": str(CENSUS), "sep": 5, "version": s["version"]})):
        status, err, _ = call(base, "POST", path, body, token)
        assert status == 400 and isinstance(err["detail"], str) and "\n" not in err["detail"], (path, body, err)
    status, err, _ = call(base, "GET", "/api/table?offset=first", token=token)
    assert status == 400 and isinstance(err["detail"], str)
    assert call(base, "GET", "/api/session", token=token)[1]["version"] == s["version"]


def test_a_session_folder_used_again(tmp_path):
    for _ in range(2):
        with running(folder=tmp_path / "same") as (base, token, _):
            s = opened(base, token)
            call(base, "POST", "/api/roles", {"roles": census_roles(s["file"]["columns"]), "version": s["version"]},
                 token)
            assert applied(base, token, k=3)["status"] == "done"


def test_neutral_options_are_the_commands_defaults():
    """The options a recipe may hold at their default without the workbench setting them
    (workbench.recipes.NEUTRAL) are the command line's defaults, and the options the workbench sets
    exist in each command's parser."""
    from probanon.cli.main import build_parser
    from probanon.workbench import methods, recipes

    parser = build_parser()
    commands = next(a for a in parser._subparsers._group_actions).choices
    for command, neutral in recipes.NEUTRAL.items():
        defaults = {a.dest: a.default for a in commands[command]._actions}
        assert {name: defaults[name] for name in neutral} == neutral, command
    for method, spec in methods.METHODS.items():
        dests = {a.dest for a in commands[spec["command"]]._actions}
        wanted = {p["name"] for p in spec["params"]} | set(spec["fixed"]) | methods.ROLE_OPTIONS[spec["command"]] \
            | {"seed", "link", "keep_other", "prepare" if spec["command"] != "recode" else "recode"}
        assert wanted <= dests, (method, wanted - dests)


def test_l_diverse_and_t_close_microaggregation(wb, tmp_path):
    """MDAV with l-diverse groups on the confidential columns: every released group (records with
    the same released keys) holds at least l distinct values of each (pandas); t-closeness runs
    with the confidential columns as its sensitive ones."""
    base, token, bench = wb
    s = opened(base, token)
    roles = {c: "key" if c in KEYS else "keep" for c in s["file"]["columns"]} | {"FEDTAX": "confidential",
                                                                                "STATETAX": "confidential"}
    call(base, "POST", "/api/roles", {"roles": roles, "version": s["version"]}, token)
    job = applied(base, token, "mdav-l", k=3, l_diversity=3, accept_risk=True)
    assert job["status"] == "done", job["error"]
    release = pd.read_csv(Path(bench.state.strategies[-1].folder) / "release.csv")
    distinct = release.groupby(KEYS)[["FEDTAX", "STATETAX"]].nunique()
    assert distinct.min().min() >= 3 and release.groupby(KEYS).size().min() >= 3
    job = applied(base, token, "mdav-t", k=3, t_closeness=0.5, accept_risk=True)
    assert job["status"] == "done", job["error"]
    assert 't_closeness = 0.5' in bench.state.strategies[-1].recipe and "sensitive" in bench.state.strategies[-1].recipe
    status, png, headers = call(base, "GET", "/api/compare.png?k=3", token=token)
    assert status == 200 and png[:8] == b"\x89PNG\r\n\x1a\n" and headers["content-type"] == "image/png"
    assert call(base, "GET", "/api/compare.png?k=1", token=token)[1]["field"] == "k"
    assert call(base, "GET", "/api/compare.png?ids=99", token=token)[1]["detail"].startswith("no strategy to compare")


def test_record_swapping_keeps_households_whole(wb, tmp_path):
    rng = np.random.default_rng(12)
    households = 200
    sizes = rng.integers(1, 5, households)
    hid = np.repeat(np.arange(households), sizes)
    region = np.repeat(rng.choice(["north", "south", "east"], households), sizes)
    frame = pd.DataFrame({"hid": hid, "region": region, "sex": rng.choice(["f", "m"], len(hid)),
                          "age": rng.integers(0, 90, len(hid)) // 10, "income": rng.normal(2000, 300, len(hid)).round()})
    path = tmp_path / "households.csv"
    frame.to_csv(path, index=False)
    base, token, bench = wb
    s = opened(base, token, path)
    roles = {"hid": "household", "region": "categorical key", "sex": "categorical key", "age": "categorical key",
             "income": "confidential"}
    call(base, "POST", "/api/roles", {"roles": roles, "version": s["version"]}, token)
    job = applied(base, token, "record-swap", hierarchy="region", risk_variables="sex,age", k=3, swaprate=0.1)
    assert job["status"] == "done", job["error"]
    release = pd.read_csv(Path(bench.state.strategies[-1].folder) / "release.csv")
    link = pd.read_csv(Path(bench.state.strategies[-1].folder) / "link.csv")
    assert len(release) == len(frame)
    assert (release.groupby("hid")["region"].nunique() == 1).all()  # households whole
    moved = release.iloc[link.sort_values("original_row")["released_row"].to_numpy() - 1]["region"].to_numpy() \
        != frame["region"].to_numpy()
    assert moved.any()
    status, err, _ = call(base, "POST", "/api/apply", {"method": "record-swap", "params": {"k": 3},
                                                        "version": bench.version}, token)
    assert status == 400 and err == {"detail": "hierarchy: give a value", "field": "hierarchy"}
