"""Where numba keeps probanon's compiled kernels, so that they compile at most once per
installation (issue 39, point 8).

Every kernel is ``cache=True``: numba writes the compiled code next to its module, in the
package's ``__pycache__``. When the package folder is not writable (installed by another user,
or read-only), numba 0.68 falls back to ``~/.cache/numba``, and when that is not writable either
(a service account whose home is ``/nonexistent``) it refuses to import the module at all
("cannot cache function ...: no locator available"). :func:`configure` runs when probanon is
imported, before any kernel module: if the user has not set ``NUMBA_CACHE_DIR`` and the
package's ``__pycache__`` is not writable, it sets ``NUMBA_CACHE_DIR`` (and numba's config, if
numba is loaded already) to the first writable of the user's cache folder
(``$XDG_CACHE_HOME`` or ``~/.cache``, then ``probanon/numba``) and a private folder in the
temporary directory (``probanon-UID/numba``, mode 0700, used only if it belongs to this user:
numba loads code from it). The variable also reaches processes started from this one (Dask
workers). It applies to every numba cache of the process, as ``NUMBA_CACHE_DIR`` does.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def writable(folder: Path) -> bool:
    """Can this process create ``folder`` and files in it? (numba's own test)"""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
        return True
    except OSError:
        return False


def _private(folder: Path) -> bool:
    """``folder`` exists, belongs to this user and no one else may write into it."""
    try:
        folder.parent.mkdir(mode=0o700, exist_ok=True)
        folder.mkdir(mode=0o700, exist_ok=True)
        return all(p.stat().st_uid == getattr(os, "getuid", lambda: 0)() and not p.stat().st_mode & (stat.S_IWGRP | stat.S_IWOTH)
                   for p in (folder.parent, folder)) and writable(folder)
    except OSError:
        return False


def user_cache() -> Path:
    """The user's cache folder for probanon's kernels (XDG: ``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "probanon" / "numba"


def configure() -> Path | None:
    """Set ``NUMBA_CACHE_DIR`` when the package folder cannot hold the cache (see the module
    docstring); returns the folder set, or None (the user's setting or the package folder)."""
    if os.environ.get("NUMBA_CACHE_DIR") or writable(PACKAGE / "__pycache__"):
        return None
    if writable(user_cache()):
        folder = user_cache()
    else:
        folder = Path(tempfile.gettempdir()) / f"probanon-{getattr(os, 'getuid', lambda: 0)()}" / "numba"
        if not _private(folder):
            return None
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    config = sys.modules.get("numba.core.config")
    if config is not None:
        config.CACHE_DIR = str(folder)
    return folder
