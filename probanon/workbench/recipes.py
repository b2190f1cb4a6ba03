"""The workbench's exports and the recipes it continues from.

:func:`export` writes a strategy as the command line makes it: the recipe of the strategy's own
preparation and roles (never the ones set since) is run by ``probanon release`` in a fresh staging
folder; only once it succeeded are its files (the release, link file, reports with the step log,
preparation, recipe, resolved recipe, step log, and an uploaded input) moved into the office's
folder, after checking that none of them would replace a file unless the office said "overwrite".
:func:`read_for_workbench` reads a recipe to continue from, refusing (before anything changes) any
option the workbench cannot set, so a continued strategy is the recipe's release.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..formats import table_format
from . import methods
from .jobs import Cancelled, Job, run_command

#: options a recipe may hold beyond the roles and the treatment's parameters, when they have these
#: values: the command's defaults (a resolved recipe names every option; tests/test_workbench_api.py
#: checks them against the parser)
NEUTRAL = {
    "microaggregate": {"method": "mdav", "gamma": 0.2, "init": "auto", "l_kind": "distinct", "t_algorithm": "auto", "missing": "raise"},
    "suppress": {"method": "fast", "interval_labels": "interval", "closed": "right"},
    "recode": {"interval_labels": "interval", "closed": "right"},
    "pram": {"diagonal": "uniform"},
    "swap": {},
    "record-swap": {},
    "noise": {"delta": 0.1, "missing": "raise"},
    "rank-swap": {"top": 5.0, "bottom": 5.0, "missing": "raise"},
}
#: options the workbench sets from its roles, and the run's own
ROLE_NAMES = {"keys": "key", "nominal": "categorical key", "confidential": "confidential", "drop": "drop",
              "strata": "stratum"}
SINGLE = {"weights": "weight", "household": "household"}
OWN = {"keep_other", "seed", "link", "prepare", "sep", "encoding", "accept_risk", "keep_order"}


@dataclass
class Found:
    """What a recipe sets: its input, CSV options, preparation (step dictionaries), roles, the
    treatment with its parameters and seed."""

    input: Path
    csv: dict
    method: str
    params: dict
    seed: int | None
    prepare: list = field(default_factory=list)
    roles: dict = field(default_factory=dict)
    keep_other: bool = False


def _names(value, option: str) -> list:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) and v for v in items):
        raise InputError(f"option {option!r}: column names (a text or a list of texts), got {value!r}")
    return items


def read_for_workbench(path) -> Found:
    """The recipe at ``path`` as the workbench continues it, checked whole (a one-line
    :class:`InputError` naming what it cannot take; nothing is changed before)."""
    from ..categorical.recoding import steps_from_file
    from ..recipe import digest, read_recipe

    path = Path(path).expanduser()
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    recipe = read_recipe(path)
    options, command = dict(recipe.get("options", {})), recipe["command"]
    found = [m for m, spec in methods.METHODS.items() if spec["command"] == command and
             all(options.get(n, NEUTRAL[command].get(n)) == v for n, v in spec["fixed"].items())]
    if not found:
        raise InputError(f"{path}: the workbench has no treatment for command {command!r}"
                         + (f" with method {options.get('method')!r}" if "method" in options else ""))
    special = [m for m in found if any(options.get(p["name"]) not in (None, False) for p in methods.METHODS[m]["params"]
                                       if p["name"] in ("t_closeness", "l_diversity"))]
    method = (special or [m for m in found if not methods.METHODS[m].get("sensitive")] or found)[0]
    params = {p["name"] for p in methods.METHODS[method]["params"]}
    steps_option = "recode" if command == "recode" else "prepare"
    for name, value in options.items():
        taken = name in ROLE_NAMES or name in SINGLE or name in OWN or name in params or name == steps_option \
            or (name == "sensitive" and methods.METHODS[method].get("sensitive")) \
            or name in methods.METHODS[method]["fixed"] or (name == "missing" and command == "microaggregate"
                                                            and value in ("raise", "pattern"))
        if not taken and value not in (None, False, [], "") and NEUTRAL.get(command, {}).get(name, object()) != value:
            raise InputError(f"{path}: option {name!r} = {value!r} is not one the workbench can set; run this recipe "
                             "with 'probanon release'")
    source = path.parent / str(recipe["input"])
    if not source.is_file():
        raise InputError(f"{path}: the input {source} does not exist")
    if recipe.get("input_sha256") is not None and digest(source) != recipe["input_sha256"]:
        raise InputError(f"{path}: the input {source} is not the file this recipe was made for (its SHA-256 differs)")
    roles = {}
    for name, role in ROLE_NAMES.items():
        for c in _names(options.get(name, []), name):
            if c in roles:
                raise InputError(f"{path}: column {c!r} is named by two options")
            roles[c] = "categorical key" if role == "key" and command in ("suppress", "pram", "recode") else role
    for name, role in SINGLE.items():
        if options.get(name):
            (c,) = _names(options[name], name)[:1] or [None]
            roles[c] = role
    if command == "record-swap":  # its geography and risk variables are keys
        for name in ("hierarchy", "risk_variables"):
            for c in _names(options.get(name, []), name):
                roles.setdefault(c, "categorical key")
    prepare = []
    if options.get(steps_option):
        prepare = [s.to_dict() for s in steps_from_file(path.parent / str(options[steps_option]), steps_option)]
    given = {name: options[name] for name in params if name in options}
    try:
        checked = methods.method_params(method, given)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    seed = options.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise InputError(f"{path}: option 'seed' must be a whole number")
    csv = {name: options[name] for name in ("sep", "encoding") if isinstance(options.get(name), str)}
    return Found(source, csv, method, checked, seed, prepare, roles, bool(options.get("keep_other")))


def _log_into_report(page: Path, log: list) -> None:
    """The workbench's step log appended to the internal report (its time, what, seconds, figures)."""
    if not page.is_file():
        return

    def seconds(e) -> str:
        return "" if e["seconds"] is None else f"{e['seconds']:.2f}"

    rows = "".join(f"<tr><td>{html.escape(e['time'])}</td><td>{html.escape(e['what'])}</td><td>{seconds(e)}</td>"
                   f"<td>{html.escape(json.dumps(e['figures']))}</td></tr>" for e in log)
    section = ("<h2>Workbench step log</h2><p>Every step of the workbench session that made this release, with its "
               "time and figures (also in steps.json beside the release).</p><table><tr><th>time (UTC)</th>"
               f"<th>step</th><th>seconds</th><th>figures</th></tr>{rows}</table>")
    text = page.read_text(encoding="utf-8")
    at = text.rfind("</body>")
    page.write_text(text[:at] + section + text[at:] if at >= 0 else text + section, encoding="utf-8")


def export(bench, strategy, folder, name: str, force: bool, log: list) -> Job:
    """Strategy ``strategy`` of workbench ``bench`` into ``folder`` (module docstring): the release
    ``name`` (its format by its ending), all or nothing, existing files replaced only with ``force``."""
    folder = Path(folder).expanduser()
    if not folder.is_absolute():
        raise InputError("folder: give an absolute path")
    if folder.exists() and not folder.is_dir():
        raise InputError(f"folder: {folder} is a file")
    if Path(name).name != name or name in ("", ".", ".."):
        raise InputError("name: a file name, without folders")
    try:
        table_format(name, "release")
    except InputError as exc:
        raise InputError(f"name: {exc}") from None
    source, basis = strategy.source, strategy.basis
    reserved = {"link.csv", "recipe.toml", "prepare.json", "steps.json", name + ".recipe.toml"}
    if name in reserved or (source.uploaded and name == source.path.name):
        raise InputError(f"name: {name} is the name of another file of the export; choose another")
    command = methods.METHODS[strategy.method]["command"]
    lacking = strategy.lacking  # the report of a fit by missing-value pattern is not available: none
    report = "report" if command in methods.REPORTED and dict(strategy.params).get("k") and not lacking else None
    staging = Path(tempfile.mkdtemp(prefix="e-", dir=bench._made("exports")))
    columns = strategy.columns
    text, _ = bench._recipe(staging, strategy.method, dict(strategy.params), strategy.seed, name, "link.csv", report,
                            basis, source, columns, lacking,
                            input_path=Path(source.path.name) if source.uploaded else None)
    (staging / "recipe.toml").write_text(text, encoding="utf-8")
    if source.uploaded:  # the input travels with the recipe
        shutil.copyfile(source.path, staging / source.path.name)

    def work(job: Job):
        run_command(job, ["release", "recipe.toml"], staging)
        if job.cancel.is_set():  # nothing is in the office's folder yet
            raise Cancelled("cancelled")
        (staging / "steps.json").write_text(json.dumps(log, indent=1), encoding="utf-8")
        if report:
            _log_into_report(staging / report / "internal" / "index.html", log)
        files = sorted(p.relative_to(staging) for p in staging.rglob("*") if p.is_file())
        clash = [str(f) for f in files if (folder / f).exists()]
        if clash and not force:
            raise InputError(f"folder: {folder} already holds {clash[0]}" + (f" and {len(clash) - 1} more" if
                                                                             len(clash) > 1 else "")
                             + " (tick 'overwrite')")
        for f in files:  # each file whole: copied beside its place, then renamed over it
            target = folder / f
            target.parent.mkdir(parents=True, exist_ok=True)
            part = target.with_name(f".{target.name}.part")
            shutil.copyfile(staging / f, part)
            os.replace(part, target)
        return {"folder": str(folder), "files": [str(f) for f in files]}

    return bench.jobs.start("export", work, where=methods.field_of)


__all__ = ["export", "read_for_workbench"]
