"""Memory guard for PCL (issue 13, point 14; limits raised by issue 16): refuse a fit whose
estimated peak memory exceeds half of the machine's available memory, before any work.

Cells of fewer than 256 records (the exact path of :mod:`.pcl`) work in O(n (d + L))
memory: candidate cells pooled or priced cell by cell (:mod:`.candidates`), the size-constrained
assignment as a min-cost flow over them (:mod:`.transport`), no n x |Q| matrix. Cells of at
least 256 records (the Levenberg-Marquardt path) still hold dense n x |Q| arrays, |Q| <=
n / 256. The estimate (:func:`pcl_peak_memory`) is

    bytes = RECORD_BYTES * n                                  (k < 256)
    bytes = RECORD_BYTES * n + DENSE_BYTES_PER_CELL * n * |Q| (k >= 256)

with the constants measured below. The limit for k < 256 is now about 2.8 million records
per 24 GB machine (half of the available memory / RECORD_BYTES); larger files go through
blocked microaggregation (:mod:`.blocks`), whose blocks are far below it.
:func:`available_memory` is a module-level function so that tests can replace it.
"""

import os

from ..errors import ParameterError

#: cells at least this large take PCL's Levenberg-Marquardt path (:mod:`.pcl`, Appendix A), which
#: holds dense n x |Q| arrays
SMOOTH_MIN_K = 256

#: bytes per cell of the dense n x |Q| arrays of the large-cell path (distances, the
#: Levenberg-Marquardt assignment's temporaries): tracemalloc peak per cell of whole fits
#: before issue 16 was 35.7-43.3 B; 44 B kept.
DENSE_BYTES_PER_CELL = 44
#: bytes per record of the small-cell path: growth of VmHWM over VmRSS across PCL(5).fit on
#: 10-D Gaussians: 2,218 B at n = 20,000 (candidate arrays, the min-cost flow's arcs, the
#: local search's member lists, the k-d tree's output), 2,141-2,227 B at n = 100,000 (4,240 B
#: while each pricing round widened every record's candidates); 4096 B allows for ties (wider
#: candidate lists) and other d.
RECORD_BYTES = 4096
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
    return int(RECORD_BYTES * n + (DENSE_BYTES_PER_CELL * n * Q if k >= SMOOTH_MIN_K else 0))


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
f"PCL with k = {k} on {n} records needs about {_gb(need)} of memory ({RECORD_BYTES} B per record"
            f"{'' if need == RECORD_BYTES * n else ' and n x n/k matrices for cells of >= 256 records'}), more than "
            f"half of the {_gb(available)} available; at most {pcl_largest_n(k, budget)} records for k = {k}; "
            f"use blocks (block_size=, --block-size), MDAV or V-MDAV"
        )
