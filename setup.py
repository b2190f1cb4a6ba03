"""Build hook: before setuptools collects the package data, copy the example data sets from
``../shared/data`` beside the source tree into ``probanon/datasets/data`` (never committed; see
``probanon/datasets/sources.py``). Everything else is in pyproject.toml."""

import importlib.util
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent / "shared" / "data"

if SHARED.is_dir():
    spec = importlib.util.spec_from_file_location("_probanon_sources", HERE / "probanon" / "datasets" / "sources.py")
    sources = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sources)
    sources.populate(SHARED)

setup()
