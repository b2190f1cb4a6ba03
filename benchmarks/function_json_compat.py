"""Published functions before and after a change to probanon/microagg (issue 41.3, one class per
published rule): the JSON of one function of each kind, byte for byte, and the cells and values
it gives new records.

Run the same script twice, once with the old code on PYTHONPATH (``save``), once with the new
(``compare``)::

    git worktree add /tmp/old 2751ac9
    PYTHONPATH=/tmp/old .venv/bin/python benchmarks/function_json_compat.py save /tmp/fj
    PYTHONPATH=. .venv/bin/python benchmarks/function_json_compat.py compare /tmp/fj
    PYTHONPATH=. .venv/bin/python benchmarks/function_json_compat.py time /tmp/old

``save`` fits or designs every case on small data with fixed seeds and stores its JSON (compact
and indented), its cells and values on new records, and the JSON a read-back of it writes.
``compare`` does the same with the code on PYTHONPATH and prints, per case, whether the JSON
is identical, whether the cells (and the count of cells) and values are, and whether the new code reads the OLD JSON
back to the same bytes and the same cells. ``time`` times ``assign`` of the old and the new
code interleaved in one process (:func:`timing`).
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from probanon.microagg import MDAV, PCL, VMDAV, IndividualRanking, function_from_json
from probanon.survey.design import design

CENSUS = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "casc" / "census.csv"
MIXED = {"nominal": ["region"], "ordinal": {"education": ["primary", "secondary", "tertiary"]}}


def numeric(n=300, seed=0) -> np.ndarray:
    """Correlated normal keys, one rounded (ties on a sphere and duplicate records)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) @ rng.normal(size=(3, 3))
    X[:, 2] = np.round(X[:, 2])
    return X


def mixed(n=400, seed=5) -> pd.DataFrame:
    """Two numeric keys, a nominal and an ordinal one (as tests/test_survey_modes.py)."""
    rng = np.random.default_rng(seed)
    region = rng.choice(["North", "South", "East", "West, coast"], n)
    education = rng.choice(["primary", "secondary", "tertiary"], n, p=[0.3, 0.5, 0.2])
    age = rng.integers(18, 90, n)
    income = rng.gamma(2.0, 15000, n) + (region == "North") * 20000
    return pd.DataFrame({"age": age, "income": income.round(2), "region": region, "education": education})


def new_records(X: np.ndarray, seed=1) -> np.ndarray:
    """Records around the data, fitted records themselves and far ones."""
    rng = np.random.default_rng(seed)
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return np.vstack([lo - 0.5 * span + 2 * span * rng.random((200, X.shape[1])), X[::3],
                      np.full((1, X.shape[1]), 1e9), lo - 1e6 * span])


def cases():
    """{name: (function, records to assign, strata of those records or None)}."""
    X = numeric()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    rng = np.random.default_rng(2)
    strata = pd.Series(rng.choice(["x", "y", "z"], len(X), p=[0.6, 0.3, 0.1]), name="s")
    strata[:2] = "w"  # a stratum of fewer than k records: merged
    new = new_records(X)
    new_frame = pd.DataFrame(new, columns=["a", "b", "c"])
    new_strata = pd.Series(np.resize(sorted(strata.unique()), len(new)), name="s")
    M = mixed()
    new_M = pd.concat([M.iloc[::2], M.iloc[1::2].assign(age=M["age"].iloc[1::2] + 0.5)], ignore_index=True)
    out = {
        "mdav": (MDAV(3, keep_duplicates=True).fit(X).function_, new, None),
        "mdav-frame": (MDAV(4, keep_duplicates=True).fit(frame).function_, new_frame, None),
        "mdav-one-group": (MDAV(3).fit(np.arange(10.0).reshape(5, 2)).function_, new[:, :2], None),
        "vmdav": (VMDAV(3).fit(X).function_, new, None),
        "pcl": (PCL(3, random_state=0).fit(X).function_, new, None),
        "ranking": (IndividualRanking(3, keep_ties=True).fit(X).function_, new, None),
        "ranking-frame": (IndividualRanking(5, keep_ties=True).fit(frame).function_, new_frame, None),
        "mdav-blocked": (MDAV(3, keep_duplicates=True, block_size=60).fit(X).function_, new, None),
        "vmdav-blocked": (VMDAV(3, block_size=70).fit(X).function_, new, None),
        "pcl-blocked": (PCL(3, block_size=80, random_state=0).fit(frame).function_, new_frame, None),
        "mdav-strata": (MDAV(3, keep_duplicates=True).fit(frame, strata=strata, merge_small_strata=True).function_,
                        new_frame, new_strata),
        "pcl-strata-blocked": (PCL(3, block_size=60, random_state=1).fit(frame, strata=strata.to_frame(),
                                                                         merge_small_strata=True).function_,
                               new_frame.assign(s=new_strata), None),
        "mdav-mixed": (MDAV(3, keep_duplicates=True).fit(M, **MIXED).function_, new_M, None),
        "pcl-mixed-strata": (PCL(3, random_state=2).fit(M, strata=M["region"].to_numpy(), **MIXED).function_, new_M,
                             M["region"].to_numpy()),
    }
    census = pd.read_csv(CENSUS)
    pis = np.random.default_rng(11).uniform(0.3, 0.9, len(census))
    for method in ("mdav", "pcl", "tree"):
        for model, pi in (("constant", 0.6), ("per-record", pis)):
            d = design(census, 5, pi, 1e-3, method=method, random_state=1)
            out[f"survey-{method}-{model}"] = (d.function, census.iloc[::7] * 1.01, None)
    d = design(M, 5, 0.6, 1e-3, method="tree", **MIXED)
    out["survey-tree-mixed"] = (d.function, new_M, None)
    out["census-mdav"] = (MDAV(5).fit(census).function_, census.iloc[::5] * 0.99, None)
    return out


def observe(f, records, strata) -> dict:
    text = f.to_json()
    back = function_from_json(text)
    return {"kind": f.kind, "n_cells": f.n_cells, "json": text, "indented": f.to_json(indent=2),
            "read_back": back.to_json(), "cells": f.assign(records, strata),
            "values": np.asarray(f.transform(records, strata)), "cells_read_back": back.assign(records, strata), "records": records, "strata": strata}


def save(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, (f, records, strata) in cases().items():
        with open(folder / f"{name}.pkl", "wb") as fh:
            pickle.dump(observe(f, records, strata), fh)
    print(f"saved {len(list(folder.glob('*.pkl')))} cases in {folder}")


def same(a, b) -> bool:
    return a.shape == b.shape and bool(np.all(a == b))


def compare(folder: Path) -> int:
    bad = 0
    print(f"{'case':22} {'kind':14} {'bytes':>8}  json  indent  read-back  cells  values  old json read")
    for name, (f, records, strata) in cases().items():
        with open(folder / f"{name}.pkl", "rb") as fh:
            old = pickle.load(fh)
        new = observe(f, records, strata)
        old_read = function_from_json(old["json"])
        checks = [new["json"] == old["json"], new["indented"] == old["indented"],
                  new["read_back"] == old["read_back"] == old["json"],
                  same(new["cells"], old["cells"]) and same(new["cells_read_back"], old["cells"])
                  and new["n_cells"] == old["n_cells"],
                  same(new["values"], old["values"]),
                  old_read.to_json() == old["json"] and same(old_read.assign(records, strata), old["cells"])]
        bad += not all(checks)
        marks = ["same" if c else "DIFFERS" for c in checks]
        print(f"{name:22} {new['kind']:14} {len(new['json']):8,}  {marks[0]:4}  {marks[1]:6}  {marks[2]:9}  "
              f"{marks[3]:5}  {marks[4]:6}  {marks[5]}")
    print("all identical" if not bad else f"{bad} case(s) differ")
    return 1 if bad else 0


def timing(old: Path, rounds: int = 9) -> None:
    """``assign`` of the old code (the package of checkout ``old``, imported as probanon_old)
    and of the code on PYTHONPATH, interleaved in this one process (the machine's load hits both
    alike): per round old then new on the same 200,000 records, then 300 calls on one record
    each; for each kind the best times and the median of the rounds' new/old ratios, with the
    parallel kernels free to run (auto) and forced serial."""
    import shutil
    import tempfile

    from probanon import _threads
    from probanon import microagg as new

    home = Path(tempfile.mkdtemp())
    shutil.copytree(old / "probanon", home / "probanon_old", ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, str(home))
    import probanon_old._threads as old_threads
    import probanon_old.microagg as before
    from probanon_old.survey.design import design as design_before

    X = numeric()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    strata = pd.Series(np.random.default_rng(2).choice(["x", "y", "z"], len(X), p=[0.6, 0.3, 0.1]), name="s")
    fits = {"ordered-balls": lambda m, d: m.MDAV(3, keep_duplicates=True).fit(X).function_,
            "power-diagram": lambda m, d: m.PCL(3, random_state=0).fit(X).function_,
            "intervals": lambda m, d: m.IndividualRanking(3).fit(X).function_,
            "blocked": lambda m, d: m.MDAV(3, keep_duplicates=True, block_size=60).fit(X).function_,
            "stratified": lambda m, d: m.MDAV(3, keep_duplicates=True).fit(frame, strata=strata).function_,
            "decision-tree": lambda m, d: d(frame, 3, 1.0, 0.5, method="tree").function}
    rows = np.resize(np.arange(len(X)), 200_000)
    big, big_strata = frame.iloc[rows] * 1.001, strata.iloc[rows]
    for mode in (_threads.AUTO, _threads.SERIAL):
        _threads.MODE = old_threads.MODE = mode
        print(f"kernels {'auto' if mode == _threads.AUTO else 'serial'}: {'kind':14} {'200,000 records: old':>21} "
              f"{'new':>8} {'new/old':>8}   {'1 record: old':>14} {'new':>8} {'new/old':>8}")
        for kind, fit in fits.items():
            f_old, f_new = fit(before, design_before), fit(new, design)
            s = big_strata if kind == "stratified" else None
            assert (f_old.assign(big, s) == f_new.assign(big, s)).all()
            times = {"old": [], "new": [], "old1": [], "new1": []}
            for _ in range(rounds):
                for name, f in (("old", f_old), ("new", f_new)):
                    t = time.perf_counter()
                    f.assign(big, s)
                    times[name].append(time.perf_counter() - t)
                for name, f in (("old1", f_old), ("new1", f_new)):
                    t = time.perf_counter()
                    for _ in range(300):
                        f.assign(big.iloc[:1], None if s is None else s.iloc[:1])
                    times[name].append((time.perf_counter() - t) / 300)
            ratio = statistics.median(b / a for a, b in zip(times["old"], times["new"]))
            ratio1 = statistics.median(b / a for a, b in zip(times["old1"], times["new1"]))
            print(f"{'':16}{kind:14} {min(times['old']):19.4f} s {min(times['new']):6.4f} s {ratio:8.2f}   "
                  f"{1e6 * min(times['old1']):11.1f} us {1e6 * min(times['new1']):5.1f} us {ratio1:8.2f}")
    shutil.rmtree(home)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("save", "compare", "time"))
    parser.add_argument("folder", type=Path, help="save/compare: the folder of the old outputs; time: the old checkout")
    args = parser.parse_args(argv)
    if args.mode == "save":
        save(args.folder)
    elif args.mode == "compare":
        return compare(args.folder)
    else:
        timing(args.folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
