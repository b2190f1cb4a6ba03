"""Memory guard for PCL (issue 13, point 14): refuse a fit whose estimated peak memory
exceeds half of the machine's available memory, before any work.

PCL's exact assignment (:func:`.transport.transport_assign`) and its strict offsets
(:func:`.potentials.strict_offsets`) build dense n x |Q| arrays (|Q| = floor(n / k) cells), so
memory grows as n^2 / k: Adult's 48,842 records at k = 5 need about 23 GB (the issue saw
21.7 GB before it was stopped). Until PCL works in
O(n d) memory, :func:`check_pcl_memory` stops such a fit with a one-line
:class:`ParameterError` that names MDAV and V-MDAV (O(n d) memory) and the size limit.

The estimate (:func:`pcl_peak_memory`) is

    bytes = DENSE_BYTES_PER_CELL * n * |Q| + HIGHS_BYTES_PER_VARIABLE * n * min(|Q|, 32)

with the constants measured below (d = 3; the O(n d) arrays are negligible beside them).
Against the peak resident memory of whole fits (PCL(5), growth of VmHWM over the RSS before
the fit): Gaussian n = 5000: 229 MB measured, 428 MB estimated; Gaussian n = 20,000: 3.61 GB
measured, 4.35 GB estimated; Adult sample n = 10,000: 1.307 GB measured, 1.296 GB estimated.
:func:`available_memory` is a module-level function so that tests can replace it.
"""

from __future__ import annotations

import os

from ..errors import ParameterError

#: bytes per cell of the n x |Q| arrays alive at once in transport_assign (distances D, the
#: candidate mask, the argpartition index array, the reduced costs and their temporaries; in a
#: second pricing round the previous reduced costs are still alive while the new ones are
#: built): tracemalloc peak of one transport_assign call, 35.7 B at n = 5000 and 35.3 B at
#: n = 10,000 (k = 5, d = 3, Gaussian, one round); strict_offsets peaks lower (16.0 B). Whole
#: PCL(5) fits, tracemalloc peak per cell: 35.7 B (Gaussian n = 5000), 42.2 B (Gaussian
#: n = 20,000), 43.3 B (Adult's age, education-num, hours-per-week, 10,000 records drawn).
DENSE_BYTES_PER_CELL = 44
#: resident bytes per variable of scipy's linprog(method="highs") on the transportation LP
#: (growth of VmHWM over VmRSS across the call): 1306 B at 40,000 variables (n = 5000, k = 5),
#: 1297 B at 160,000 (n = 20,000, k = 5), 1324 B at 400,000 (n = 50,000, k = 50); 257 B of
#: them are scipy's Python-side copies seen by tracemalloc, the rest is HiGHS's own.
HIGHS_BYTES_PER_VARIABLE = 1300
#: LP variables per record: transport_assign starts from 8 candidate cells and doubles them
#: while the LP is infeasible, which tied data cause: 8.00 variables per record on Gaussian
#: samples (n = 5000, 20,000), but 8 -> 16 -> 32 -> 32.25 on the Adult sample (n = 10,000,
#: 9953 distinct tuples in all of Adult's 48,842). 32 covers both (capped at |Q|).
LP_CANDIDATES = 32
#: a fit may use at most this fraction of the available memory
MEMORY_FRACTION = 0.5


MEMINFO = "/proc/meminfo"


def available_memory() -> int:
    """Bytes of memory available to a new allocation: MemAvailable of /proc/meminfo (Linux),
    else the available (or, failing that, all) physical pages times the page size."""
    try:
        with open(MEMINFO) as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    page = os.sysconf("SC_PAGE_SIZE")
    for name in ("SC_AVPHYS_PAGES", "SC_PHYS_PAGES"):
        try:
            pages = os.sysconf(name)
        except (ValueError, OSError):
            continue
        if pages > 0:
            return int(pages) * int(page)
    raise OSError("cannot tell how much memory is available")


def pcl_peak_memory(n: int, k: int) -> int:
    """Estimated peak bytes of a PCL fit of n records with minimum cell size k (module
    docstring); 0 when there is a single cell (no assignment is solved)."""
    Q = n // k
    if Q <= 1:
        return 0
    return int(DENSE_BYTES_PER_CELL * n * Q + HIGHS_BYTES_PER_VARIABLE * n * min(Q, LP_CANDIDATES))


def pcl_largest_n(k: int, budget: float) -> int:
    """The largest n whose :func:`pcl_peak_memory` for this k stays within ``budget`` bytes
    (the estimate grows with n)."""
    lo, hi = k, 2 * k
    while pcl_peak_memory(hi, k) <= budget:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:  # pcl_peak_memory(lo) <= budget < pcl_peak_memory(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if pcl_peak_memory(mid, k) <= budget else (lo, mid)
    return lo


def _gb(x: float) -> str:
    return f"{x / 1e9:.1f} GB"


def check_pcl_memory(n: int, k: int) -> None:
    """Raise :class:`ParameterError` (one line) when PCL on n records at this k would need
    more than MEMORY_FRACTION of the available memory."""
    need = pcl_peak_memory(n, k)
    if need == 0:
        return
    available = available_memory()
    budget = MEMORY_FRACTION * available
    if need > budget:
        raise ParameterError(
            f"PCL with k = {k} on {n} records needs about {_gb(need)} of memory (n x n/k matrices), more than "
            f"half of the {_gb(available)} available; use MDAV or V-MDAV (O(n d) memory), a larger k, or "
            f"at most {pcl_largest_n(k, budget)} records for k = {k}"
        )
