"""The kernels compile at most once per installation, also when the package folder is
read-only (issue 39, point 8): probanon._cache points numba at the user's cache folder, or at a
private temporary one when the user has no writable home (numba alone refused to import the
kernels then: "cannot cache function ...: no locator available")."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# counts numba's compilations (its "numba:compile" event: cache misses only) while a kernel runs
SCRIPT = """
import json, os
from numba.core import event

compiled = []
class Count(event.Listener):
    def on_start(self, e):
        compiled.append(e.data["dispatcher"].py_func.__qualname__)
    def on_end(self, e):
        pass
event.register("numba:compile", Count())
import numpy as np
import probanon._threads
from probanon.exactsum import exact_sums
assert exact_sums(np.array([[1.0, 2.0], [3.0, 4.0]])).tolist() == [4.0, 6.0]
print(json.dumps({"compiled": compiled, "cache": os.environ.get("NUMBA_CACHE_DIR")}))
"""

def _without_override() -> list[str]:
    """Root ignores permissions: run the child as root without the capabilities that override
    them (util-linux's setpriv), so that a 0555 folder is read-only for it too."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: a read-only folder cannot be made")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"]


@pytest.fixture
def read_only_install(tmp_path):
    site = tmp_path / "site"
    shutil.copytree(ROOT / "probanon", site / "probanon", ignore=shutil.ignore_patterns("__pycache__", "data"))
    for path in [site, *site.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    yield tmp_path, site
    for path in [site, *site.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


@pytest.mark.parametrize("home_writable", [True, False])
def test_a_read_only_package_compiles_its_kernels_once(read_only_install, home_writable):
    base, site = read_only_install
    home, tmp = base / "home", base / "tmp"
    home.mkdir()
    tmp.mkdir(mode=0o700)
    if not home_writable:
        home.chmod(0o555)
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH")}
    env.update(HOME=str(home), TMPDIR=str(tmp), PYTHONPATH=str(site))
    runs = []
    for _ in range(2):
        run = subprocess.run([*_without_override(), sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                             text=True, cwd=base, timeout=300)
        assert run.returncode == 0, run.stderr[-2000:]
        runs.append(json.loads(run.stdout))
    expected = home / ".cache/probanon/numba" if home_writable else tmp / f"probanon-{os.getuid()}/numba"
    assert runs[0]["cache"] == runs[1]["cache"] == str(expected)
    assert runs[0]["compiled"], "the first run compiles"
    assert runs[1]["compiled"] == [], "the second run loads every kernel from the cache"
    assert list(expected.rglob("*.nbi")) and not list(site.rglob("__pycache__"))
    if not home_writable:
        assert (expected.stat().st_mode & 0o777) == 0o700
