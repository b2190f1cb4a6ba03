"""`probanon reproduce pcl`: paper 3, Sec. 7 (PCL against MDAV), ours beside the paper's figures.

The paper's figures are transcribed here again from ../shared/papers/k-anonymous-lloyd-pcl.txt
(Sec. 7.1: 16 % and 11 % at |Q| = 16, "up to 19 %"; Sec. 7.2: at least 22 %, up to 32 %,
jitter <= 0.1 %, 48,842 records with 9953 distinct tuples) and NOTES.md Sec. 3 (closed forms);
distortions are recomputed from the written partitions with plain NumPy.
"""

import contextlib
import io
import json
import math

import numpy as np
import pytest

from helpers import SHARED_DATA
from probanon import cli
from probanon.errors import InputError, ParameterError
from probanon.reproduce import pcl as pcl_module
from probanon.reproduce.pcl import reproduce_pcl

PNG = b"\x89PNG\r\n\x1a\n"
ADULT = SHARED_DATA / "adult" / "adult.csv"
needs_adult = pytest.mark.skipif(not ADULT.is_file(), reason=f"UCI Adult not found at {ADULT}")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("pcl")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        result = reproduce_pcl(output_dir=out_dir, quick=True)
    assert buf.getvalue() == ""  # the library stays quiet
    return dict(result=result, text=result["text"], dir=out_dir)


def own_distortion(Z, labels):
    """SSE / (n d) with each cell's mean, computed cell by cell."""
    sse = 0.0
    for g in np.unique(labels):
        cell = Z[labels == g]
        sse += float(((cell - cell.mean(axis=0)) ** 2).sum())
    return sse / Z.size


def test_files_are_written(run):
    d = run["dir"]
    names = ["pcl_fig3_cells", "pcl_fig4_gain"] + (["pcl_fig7_adult"] if ADULT.is_file() else [])
    for name in names:
        assert (d / f"{name}.png").read_bytes().startswith(PNG), name
    page = (d / "pcl.html").read_text()
    assert page.count("data:image/png;base64,") == len(names)
    assert "Fig. 3" in page and "Fig. 4" in page
    assert (d / "pcl.txt").read_text() == run["text"]
    assert json.loads((d / "pcl.json").read_text()) == {k: v for k, v in run["result"].items() if k != "text"}
    assert sorted(p.name for p in d.iterdir()) == run["result"]["files"]  # no temporary leftovers


def test_text_states_paper_figures_and_quick_mode(run):
    text = run["text"]
    for printed in ("16%", "11%", "19%", "22%", "32%"):
        assert printed in text, printed
    assert "QUICK MODE" in text and "NOT comparable" in text
    assert "== Summary ==" in text


def test_fig3_distortions_recomputed_independently(run):
    """D of MDAV and PCL recomputed from the written samples and labels."""
    parts = np.load(run["dir"] / "pcl_fig3_partitions.npz")
    n, cells = 2**13, 16
    for r in run["result"]["fig3"]["runs"]:
        tag = f"rho{r['rho']:g}".replace(".", "_")
        Z, mdav, pcl = parts[f"Z_{tag}"], parts[f"labels_mdav_{tag}"], parts[f"labels_pcl_{tag}"]
        assert Z.shape == (n, 2) and r["k"] == n // cells == 512
        # z-scored Gaussian with correlation rho: 4 standard errors (1 - rho^2) / sqrt(n)
        assert np.allclose(Z.mean(axis=0), 0, atol=1e-12) and np.allclose(Z.std(axis=0), 1, atol=1e-12)
        assert abs(np.corrcoef(Z.T)[0, 1] - r["rho"]) < 4 * (1 - r["rho"] ** 2) / math.sqrt(n)
        # n = 16 k: every cell of a k-anonymous partition into 16 cells holds exactly k
        assert np.array_equal(np.bincount(mdav), np.full(cells, 512))
        assert np.array_equal(np.bincount(pcl), np.full(cells, 512))
        d_mdav, d_pcl = own_distortion(Z, mdav), own_distortion(Z, pcl)
        assert r["D_mdav"] == pytest.approx(d_mdav, rel=1e-12)
        assert r["D_pcl"] == pytest.approx(d_pcl, rel=1e-12)
        assert r["gain_percent"] == pytest.approx(100 * (d_mdav - d_pcl) / d_mdav, rel=1e-9)


def test_sanity_closed_forms(run):
    """NOTES.md Sec. 3: two cells give D = 1 - 2/pi (d = 1) and 1 - 1/pi (d = 2, rho = 0), up to
    sampling error (4 standard errors, se <= sqrt(2 / n)); the scalar case gives PCL = MDAV."""
    runs = {r["d"]: r for r in run["result"]["sanity"]["runs"]}
    assert {r["n"] for r in runs.values()} == {2**12}
    tol = 4 * math.sqrt(2 / 2**12)
    assert runs[1]["D_pcl"] == pytest.approx(1 - 2 / math.pi, abs=tol)
    assert runs[2]["D_pcl"] == pytest.approx(1 - 1 / math.pi, abs=tol)
    assert runs[1]["D_pcl"] == pytest.approx(runs[1]["D_mdav"], rel=1e-9)


def test_grid_is_k_anonymous(run):
    runs = run["result"]["fig4"]["runs"]
    assert sorted((r["d"], r["cells"]) for r in runs) == [(d, q) for d in (2, 3, 4) for q in (4, 8, 16)]
    for r in runs:
        assert r["error"] is None
        assert r["k"] == 2**13 // r["cells"] and r["min_size_pcl"] >= r["k"] and r["min_size_mdav"] >= r["k"]


@needs_adult
def test_adult_part(run):
    f7 = run["result"]["fig7"]
    data = f7["data"]
    assert data["records"] == 48842 and data["distinct"] == 9953  # Sec. 7.2
    assert f7["records_used"] == 48842 and [r["k"] for r in f7["runs"]] == [2000, 4000]
    for r, least in zip(f7["runs"], (32, 22)):  # Sec. 7.2: up to 32% at k = 2000, >= 22% at the largest k
        assert r["error"] is None
        assert r["min_size_pcl"] >= r["k"] and r["min_size_mdav"] >= r["k"]
        assert r["jitter_variation_percent"] <= 0.1  # Sec. 7.2: "<= 0.1%"
        assert r["gain_percent"] >= least


def test_configuration_error_is_reported_not_raised(monkeypatch):
    class Failing:
        def __init__(self, k, random_state=None):
            self.k = k

        def fit(self, X):
            raise ParameterError("cells cannot be balanced")

    Z = np.random.default_rng(0).standard_normal((40, 2))
    monkeypatch.setattr(pcl_module, "PCL", Failing)
    row, labels = pcl_module._compare(Z, Z, 10)
    assert row["error"] == "ParameterError: cells cannot be balanced"
    assert row["D_pcl"] is None and row["gain_percent"] is None and "pcl" not in labels

    class Broken(Failing):
        def fit(self, X):
            raise RuntimeError("bug")

    monkeypatch.setattr(pcl_module, "PCL", Broken)
    with pytest.raises(RuntimeError):
        pcl_module._compare(Z, Z, 10)


def test_missing_explicit_data_dir_is_an_error(tmp_path):
    with pytest.raises(InputError, match="adult.csv"):
        reproduce_pcl(output_dir=tmp_path / "out", data_dir=tmp_path / "nothing", quick=True)
    assert not (tmp_path / "out").exists()


def test_cli_is_deterministic(tmp_path, capsys, monkeypatch):
    """The CLI run (default --seed 2016 = the library's default) gives the library run's numbers.
    Both run a reduced --quick (n = 2^10, one |Q|, Adult at one k) so that the check costs seconds:
    what is compared is the entry points and the seeding, not the sizes."""
    quick = pcl_module._settings(True)
    tiny = dict(quick, n=2**10, sanity_n=2**9, fig3_cells=4, dims=(2,), cells=(4,), adult_k=(12000,))
    monkeypatch.setattr(pcl_module, "_settings", lambda _quick: dict(tiny))
    out = tmp_path / "report"
    assert cli.main(["reproduce", "pcl", "--quick", "--output-dir", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed == (out / "pcl.txt").read_text()
    assert (out / "pcl.html").is_file() and (out / "pcl_fig3_cells.png").read_bytes().startswith(PNG)
    again = json.loads((out / "pcl.json").read_text())
    with contextlib.redirect_stdout(io.StringIO()):
        library = reproduce_pcl(output_dir=tmp_path / "library", quick=True)
    assert again["fig3"]["runs"] and again["fig4"]["runs"] and again["sanity"]["runs"]
    for part in ("fig3", "fig4", "sanity", "fig7"):  # fig7: Adult, when the data sets are installed
        assert again[part].keys() == library[part].keys(), part
        for a, b in zip(again[part].get("runs", []), library[part].get("runs", []), strict=True):
            assert (a["D_mdav"], a["D_pcl"], a["error"]) == (b["D_mdav"], b["D_pcl"], b["error"])
