"""Microaggregation estimators on a real machine (issue 13): PCL's memory guard (point 14)
and the progress callback of every fit (point 13)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

from probanon.errors import ParameterError
from probanon.microagg import MDAV, PCL, VMDAV, IndividualRanking, memory
from probanon.microagg import mdav as mdav_module
from probanon.microagg import pcl as pcl_module

from helpers import SHARED_DATA


def estimate(n, k):
    """The documented estimate of probanon.microagg.memory, written out here: 4096 B per
    record, plus 44 B per cell of the n x |Q| matrices for cells of >= 256 records."""
    Q = n // k
    return 0 if Q <= 1 else 4096 * n + (44 * n * Q if k >= 256 else 0)


def largest_n(k, budget):
    """Largest n within the budget (the estimate grows with n): for k < 256, budget // 4096."""
    if k < 256:
        return int(budget // 4096)
    n = k
    while estimate(n + 1, k) <= budget:
        n += 1
    return n


@pytest.fixture
def no_work(monkeypatch):
    """Fail if PCL starts computing (its first step is MDAV)."""
    def forbidden(*args, **kwargs):
        raise AssertionError("PCL started working although it should have refused")

    monkeypatch.setattr(pcl_module, "_mdav_partition", forbidden)


# ------------------------------------------------------------------ memory guard (13.14)


def test_pcl_refuses_beyond_half_the_available_memory(monkeypatch, no_work):
    n, k = 300, 5
    X = np.random.default_rng(0).normal(size=(n, 2))
    available = 2 * estimate(n, k) - 2  # half of it is 1 byte short of the estimate
    monkeypatch.setattr(memory, "available_memory", lambda: available)
    with pytest.raises(ParameterError) as info:
        PCL(k).fit(X)
    message = str(info.value)
    assert "\n" not in message and "MDAV or V-MDAV" in message and "block_size=" in message
    assert f"at most {largest_n(k, available / 2)} records for k = {k}" in message
    assert largest_n(k, available / 2) == n - 1  # the limit is the largest n that fits


def test_pcl_runs_below_the_limit(monkeypatch):
    n, k = 300, 5
    X = np.random.default_rng(0).normal(size=(n, 2))
    reference = PCL(k, kicks=20, random_state=1).fit(X).labels_
    monkeypatch.setattr(memory, "available_memory", lambda: 2 * estimate(n, k))  # exactly at the limit
    np.testing.assert_array_equal(PCL(k, kicks=20, random_state=1).fit(X).labels_, reference)


def test_adult_at_k5_now_fits_and_large_cells_are_still_guarded(monkeypatch, no_work):
    # issue 13.14's repro (Adult at k = 5 reached 21.7 GB) is within the new limit: 4096 B per
    # record; at k = 2000 the large-cell path's matrices count: 4096 n + 44 n (n // 2000)
    assert estimate(48842, 5) == 4096 * 48842 < 12_100_000_000
    assert memory.pcl_peak_memory(48842, 5) == 4096 * 48842
    assert memory.pcl_peak_memory(48842, 2000) == 4096 * 48842 + 44 * 48842 * 24
    monkeypatch.setattr(memory, "available_memory", lambda: 24_200_000_000)
    limit = largest_n(5, 12_100_000_000)  # 12.1e9 / 4096 = 2,954,101 records
    assert limit == 2_954_101
    with pytest.raises(ParameterError, match=rf"needs about 12\.3 GB .* at most {limit} records for k = 5"):
        PCL(k=5, block_size=0).fit(np.arange(3_000_000.0)[:, None])  # unblocked: guarded
    large = 4_000_000  # k = 4096: 4096 n + 44 n (n // 4096) = 16.4 + 171.8 GB
    with pytest.raises(ParameterError, match=r"n x n/k matrices for cells of >= 256 records"):
        memory.check_pcl_memory(large, 4096)


def test_available_memory_reads_meminfo_then_sysconf(tmp_path, monkeypatch):
    fake = tmp_path / "meminfo"
    fake.write_text("MemTotal:       24684092 kB\nMemFree:  1000 kB\nMemAvailable:   12345678 kB\n")
    monkeypatch.setattr(memory, "MEMINFO", str(fake))
    assert memory.available_memory() == 12345678 * 1024
    fake.write_text("MemTotal:       24684092 kB\n")  # no MemAvailable (old kernels): physical pages
    free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert memory.available_memory() == pytest.approx(free, rel=0.2)
    monkeypatch.setattr(memory, "MEMINFO", str(tmp_path / "missing"))
    assert memory.available_memory() == pytest.approx(free, rel=0.2)


# ------------------------------------------------------------------ progress (13.13)


def record_calls(log):
    return lambda stage, done, total: log.append((stage, done, total))


def check_reports(log):
    assert log, "the progress callback was never called"
    assert all(isinstance(s, str) and s and 0 <= d <= t for s, d, t in log), log
    assert log[-1][1] == log[-1][2]  # the last stage ends complete


@pytest.mark.parametrize("k, speed, stages, absent", [
    (5, None, {"mdav start", "local search", "kicks", "free-size kicks", "publish"}, {"Lloyd"}),
    (5, 0.5, {"mdav start", "Lloyd", "local search", "kicks", "publish"}, set()),  # damped steps: Lloyd first
    (300, None, {"mdav start", "pca start", "offsets", "publish"}, {"Lloyd"})])
def test_pcl_reports_progress_before_any_compilation(monkeypatch, k, speed, stages, absent):
    X = np.random.default_rng(3).normal(size=(max(300, 2 * k), 2))
    reference = PCL(k, kicks=20, speed=speed, random_state=0).fit(X).labels_
    log = []
    real = pcl_module._mdav_partition

    def traced(*args, **kwargs):  # the first numba-compiled step of PCL
        log.append("MDAV kernel")
        return real(*args, **kwargs)

    monkeypatch.setattr(pcl_module, "_mdav_partition", traced)
    labels = PCL(k, kicks=20, speed=speed, random_state=0).fit(X, progress=record_calls(log)).labels_
    assert isinstance(log[0], tuple) and log[0][0] == "mdav start" and "MDAV kernel" in log
    reports = [e for e in log if isinstance(e, tuple)]
    check_reports(reports)
    assert stages <= {s for s, _, _ in reports} and not absent & {s for s, _, _ in reports}
    np.testing.assert_array_equal(labels, reference)  # reporting changes nothing


@pytest.mark.parametrize("make, stage", [(lambda: MDAV(5), "MDAV"), (lambda: VMDAV(5), "V-MDAV"),
                                         (lambda: IndividualRanking(5), "individual ranking")])
def test_other_methods_report_progress(monkeypatch, make, stage):
    X = np.random.default_rng(4).normal(size=(203, 3))
    log = []
    real = mdav_module._mdav_partition
    monkeypatch.setattr(mdav_module, "_mdav_partition", lambda *a, **kw: (log.append("MDAV kernel"), real(*a, **kw))[1])
    out = make().fit_transform(X, progress=record_calls(log))
    np.testing.assert_array_equal(out, make().fit_transform(X))
    assert log[0] == (stage, 0, log[0][2])  # first, before any kernel
    check_reports([e for e in log if isinstance(e, tuple)])
    if stage == "V-MDAV":  # records assigned so far, of n; then the diagram settled (issue 39.1)
        own = [e for e in log if e[0] == "V-MDAV"]
        assert own[-1] == ("V-MDAV", 203, 203) and [d for _, d, _ in own] == sorted(d for _, d, _ in own)
        assert log[-1] == ("settle", 1, 1)


def test_fits_are_silent_without_a_callback(capfd):
    X = np.random.default_rng(5).normal(size=(300, 2))
    for est in (MDAV(5), VMDAV(5), IndividualRanking(5), PCL(5, kicks=20), PCL(150)):
        est.fit(X)
    out, err = capfd.readouterr()
    assert out == "" and err == ""
