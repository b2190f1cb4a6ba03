"""Recipes (``probanon release RECIPE.toml``, :mod:`probanon.cli.recipe`): the TOML file read and
checked, and the digest a resolved recipe records of its input. The command line runs a recipe;
the workbench (:mod:`probanon.workbench`) writes and reopens them."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

from .errors import InputError

#: the release commands a recipe may name
COMMANDS = ("microaggregate", "swap", "recode", "suppress", "pram", "noise", "rank-swap", "record-swap")
#: the top-level entries a recipe may hold
TOP = {"command", "input", "output", "options", "report", "input_sha256", "probanon_version"}


def digest(path) -> str:
    """SHA-256 of a file's bytes, hex."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_recipe(path) -> dict:
    """The recipe at ``path``, checked: a known command, an input and an output (texts), only
    known top-level entries, options a table; a one-line :class:`InputError` otherwise."""
    path = Path(path)
    try:
        recipe = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a TOML recipe ({str(exc).splitlines()[0]})") from None
    unknown = sorted(set(recipe) - TOP)
    if unknown:
        raise InputError(f"{path}: unknown entry {unknown[0]!r} (a recipe holds {', '.join(sorted(TOP))})")
    if recipe.get("command") not in COMMANDS:
        raise InputError(f"{path}: 'command' must be one of {', '.join(COMMANDS)}, got {recipe.get('command')!r}")
    for key in ("input", "output"):
        if not isinstance(recipe.get(key), str) or not recipe[key]:
            raise InputError(f"{path}: {key!r} must name a file")
    if "report" in recipe and (not isinstance(recipe["report"], str) or not recipe["report"]):
        raise InputError(f"{path}: 'report' must name a folder")
    if "report" in recipe and recipe["command"] not in ("microaggregate", "swap", "recode", "suppress"):
        raise InputError(f"{path}: 'report' is made for the k-anonymous releases (microaggregate, swap, recode with k, "
                         f"suppress); {recipe['command']} promises no k: run 'probanon evaluate' or 'probanon report' "
                         "on its release")
    if not isinstance(recipe.get("options", {}), dict):
        raise InputError(f"{path}: [options] must be a table")
    return recipe


__all__ = ["COMMANDS", "TOP", "digest", "read_recipe"]
