"""Issue 42.2: information loss (SSE/SST, %) and time of the three t-closeness microaggregation
algorithms of Soria-Comas, Domingo-Ferrer, Sanchez and Martinez (IEEE TKDE 27(11) 2015) on the
CASC census and EIA files (t-closeness-first also on PCL: Lloyd rounds under its bucket
constraint), beside plain k-anonymous MDAV at the same k (the price of t). "(m=N)": groups
merged to meet t; "(k'=N)": t-closeness-first's cluster size.

    PYTHONPATH=. .venv/bin/python benchmarks/tcloseness.py [--quick]

census: keys A1-A6 (AFNLWGT, AGI, EMCONTRB, FEDTAX, PTOTVAL, STATETAX; ../shared/data/README.md),
sensitive TAXINC (A7); EIA: keys RESSALES, COMSALES, INDSALES, OTHRSALES, TOTSALES, sensitive
TOTREVENUE. The paper's own tables are not printed beside ours: its text could not be read from
this machine (only its abstract was reachable), so no figure of it is quoted. Its qualitative
conclusion (t-closeness-first loses the least information and is the fastest) is what the
columns compare. Each configuration runs once (best of 1; the machine is shared).
"""

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from probanon.diversity.microaggregation import SensitiveMicroaggregation
from probanon.metrics import information_loss
from probanon.microagg import MDAV

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "casc"
if not DATA.exists():
    DATA = Path("/work/shared/data/casc")
FILES = {
    "census": (["AFNLWGT", "AGI", "EMCONTRB", "FEDTAX", "PTOTVAL", "STATETAX"], "TAXINC"),
    "eia": (["RESSALES", "COMSALES", "INDSALES", "OTHRSALES", "TOTSALES"], "TOTREVENUE"),
}
ALGORITHMS = (("merge", "mdav"), ("k-anonymity-first", "mdav"), ("t-closeness-first", "mdav"),
              ("t-closeness-first", "pcl"))


def main(quick: bool) -> None:
    ks = (5,) if quick else (2, 5, 10)
    ts = (0.25, 0.1) if quick else (0.25, 0.15, 0.1, 0.05, 0.01)
    print(f"{'file':7} {'n':>5} {'k':>3} {'t':>5} {'plain MDAV':>10} "
          + " ".join(f"{a + ' ' + m + ' IL %':>27} {'s':>6} {'groups':>6}" for a, m in ALGORITHMS))
    for name, (keys, sensitive) in FILES.items():
        frame = pd.read_csv(DATA / f"{name}.csv")
        X, s = frame[keys].to_numpy(float), frame[sensitive]
        for k in ks:
            plain = information_loss(X, MDAV(k).fit_transform(X))
            for t in ts:
                row = f"{name:7} {len(X):5} {k:3} {t:5.2f} {plain:10.2f} "
                for algorithm, method in ALGORITHMS:
                    start = time.perf_counter()
                    m = SensitiveMicroaggregation(k, t=t, algorithm=algorithm, method=method).fit(X, sensitive=s)
                    took = time.perf_counter() - start
                    il = information_loss(X, m.centroids_[m.labels_])
                    extra = f" (k'={m.cluster_size_})" if algorithm == "t-closeness-first" else \
                        f" (m={m.merges_})"
                    row += f"{il:>16.2f}{extra:>11} {took:6.2f} {m.sizes_.size:6} "
                print(row, flush=True)


if __name__ == "__main__":
    main("--quick" in sys.argv[1:])
