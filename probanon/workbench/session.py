"""The workbench's session: one file, its preparation, the roles of its columns and the candidate
releases (strategies), with a history that can be undone and redone without limit.

Every state is a recipe. A state is immutable (:class:`State`); a change makes a new one and
appends it to the history (dropping the states undone after the current one), so undo and redo
only move along it. Changes carry the version the page last saw: a change made from a stale page
(another browser tab changed the session meanwhile) is refused with 409, so two tabs never corrupt
a session. The original file is only ever read: preparation and releases are written in the
session's private folder, exports where the office says, by the command line (all or nothing,
never over an input).
"""

from __future__ import annotations

import datetime
import itertools
import json
import secrets
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from .._validation import MAX_SEED
from ..errors import InputError, ParameterError
from ..formats import table_format
from . import measures, methods, table
from .jobs import Cancelled, Job, Jobs, run_command

#: rows of the first page, read before the whole file
HEAD_ROWS = 100


class Conflict(InputError):
    """The page's version is not the session's: another tab changed it (HTTP 409)."""


@dataclass(frozen=True)
class Strategy:
    """A candidate release: the treatment ``method`` with ``params`` and ``seed``, made by the
    command line from ``recipe`` in ``folder``; ``figures``: its risk and utility."""

    id: int
    label: str
    method: str
    params: tuple
    seed: int
    folder: str
    recipe: str
    figures: dict
    notes: tuple = ()
    basis: "State | None" = None  # the preparation and roles it was made with (its export uses them)
    source: "Source | None" = None  # the file it was made from
    columns: tuple = ()  # of the prepared table it was made from
    lacking: bool = False  # its keys lack values


@dataclass(frozen=True)
class State:
    """The file's preparation (recoding steps as dictionaries), the roles ((column, role) pairs)
    and the strategies; ``what``: the change that made it (the step log)."""

    prepare: tuple = ()
    roles: tuple = ()
    strategies: tuple = ()
    what: str = "opened"


@dataclass
class Source:
    """The file opened: ``path`` (only read), its format, CSV options, the first rows and, once read
    in the background, the whole table."""

    path: Path
    kind: str
    csv: dict
    head: pd.DataFrame
    uploaded: bool = False
    frame: pd.DataFrame | None = None
    error: str | None = None
    sha256: str | None = None  # of the bytes read: a recipe names it, so a changed file is refused
    loaded: threading.Event = field(default_factory=threading.Event)


class Workbench:
    """One office's session (module docstring); ``folder``: its private working folder."""

    def __init__(self, folder, seed: int | None = None):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.seed = secrets.randbelow(MAX_SEED + 1) if seed is None else int(seed)
        self.jobs = Jobs()
        self.lock = threading.RLock()
        self.source: Source | None = None
        self.history: list[State] = [State()]
        self.position = 0
        self.version = 0
        self.log: list[dict] = []
        self._prepared: dict = {}
        self._summaries: dict = {}
        self._numbers = itertools.count(1)

    # --- the state -----------------------------------------------------------------------------
    @property
    def state(self) -> State:
        return self.history[self.position]

    def _check_version(self, version) -> None:
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
            raise InputError(f"version: a whole number, got {version!r}")
        if version is not None and version != self.version:
            raise Conflict("the session changed in another tab or window: reload the page")

    def _commit(self, version, state: State, figures: dict | None = None) -> None:
        """Make ``state`` current (after the version check), dropping the states undone."""
        with self.lock:
            self._check_version(version)
            del self.history[self.position + 1:]
            self.history.append(state)
            self.position += 1
            self.version += 1
            self._log(state.what, figures)

    def _log(self, what: str, figures: dict | None = None, seconds: float | None = None) -> None:
        self.log.append({"time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                         "version": self.version, "what": what, "seconds": seconds, "figures": figures or {}})

    def undo(self, version) -> None:
        with self.lock:
            self._check_version(version)
            if self.position == 0:
                raise InputError("nothing to undo")
            self.position -= 1
            self.version += 1
            self._log(f"undo: {self.history[self.position + 1].what}")

    def redo(self, version) -> None:
        with self.lock:
            self._check_version(version)
            if self.position + 1 >= len(self.history):
                raise InputError("nothing to redo")
            self.position += 1
            self.version += 1
            self._log(f"redo: {self.state.what}")

    def describe(self) -> dict:
        """The page's view of the session (JSON)."""
        with self.lock:
            s, src = self.state, self.source
            return {"version": self.version, "seed": self.seed,
                    "file": None if src is None else {
                        "name": src.path.name, "path": str(src.path), "kind": src.kind, "csv": src.csv,
                        "uploaded": src.uploaded, "loaded": src.loaded.is_set(), "error": src.error,
                        "records": None if src.frame is None else int(len(src.frame)),
                        "columns": [str(c) for c in (src.head.columns if src.frame is None else self.prepared().columns)]},
                    "prepare": list(s.prepare), "roles": dict(s.roles),
                    "strategies": [{"id": g.id, "label": g.label, "method": g.method, "params": dict(g.params),
                                    "seed": g.seed, "figures": g.figures, "notes": list(g.notes)} for g in s.strategies],
                    "can_undo": self.position > 0, "can_redo": self.position + 1 < len(self.history),
                    "history": [h.what for h in self.history[1:self.position + 1]],
                    "log": self.log[-200:], "methods": methods.METHODS, "roles_known": methods.ROLES}

    # --- the file ----------------------------------------------------------------------------
    def open(self, path, sep=None, encoding=None, uploaded: bool = False, version=None) -> Job:
        """Open ``path`` (a new session on it): its first rows now, the whole table and its column
        summaries in the background (the job returned). CSV options sniffed unless given."""
        path = Path(path).expanduser().resolve()
        kind = table_format(path)
        if not path.is_file():
            raise InputError(f"{path}: no such file")
        for name, value in (("sep", sep), ("encoding", encoding)):
            if value is not None and not isinstance(value, str):
                raise InputError(f"{name}: a text, got {value!r}")
        csv = table.sniff(path) if kind == "csv" else {}
        csv = {**csv, **{k: v for k, v in (("sep", sep), ("encoding", encoding)) if v}}
        head = table.head(path, HEAD_ROWS, csv.get("sep"), csv.get("encoding"))
        source = Source(path, kind, csv, head, uploaded)
        with self.lock:
            self._check_version(version)
            self.source = source
            self.history, self.position = [State(what=f"opened {path.name}")], 0
            self.version += 1
            self._prepared, self._summaries = {}, {}
            self._log(f"opened {path.name}" + (f" (separator {csv['sep']!r}, {csv['encoding']})" if csv else ""))

        def load(job: Job):
            from ..data import csv_options, read_table

            started = time.monotonic()
            job.progress("reading the file", 0, None)
            try:
                with csv_options(csv.get("sep"), csv.get("encoding")):
                    frame = read_table(path)
                took = time.monotonic() - started  # the reading alone (the log's figure)
            except InputError as exc:
                source.error = str(exc)
                source.loaded.set()
                raise
            from ..recipe import digest

            source.sha256 = digest(path)
            source.frame = frame
            source.loaded.set()
            found = table.summaries(frame, job.progress)
            with self.lock:  # another file opened meanwhile: this one's figures are not the session's
                if self.source is source:
                    self._log(f"read {len(frame):,} records, {frame.shape[1]} columns", seconds=took)
                    self._summaries[()] = found
            return {"records": int(len(frame))}

        return self.jobs.start("open", load)

    def frame(self) -> pd.DataFrame:
        """The whole table (InputError while it is still being read, or if it could not be)."""
        src = self.source
        if src is None:
            raise InputError("no file is open")
        if not src.loaded.is_set():
            raise InputError("the file is still being read")
        if src.frame is None:
            raise InputError(src.error or "the file could not be read")
        return src.frame

    def prepared(self, prepare: tuple | None = None) -> pd.DataFrame:
        """The table after the preparation ``prepare`` (default the current one), cached."""
        from ..categorical.recoding import recode

        prepare = self.state.prepare if prepare is None else prepare
        if not prepare:
            return self.frame()
        key = json.dumps(prepare, sort_keys=True)
        if key not in self._prepared:
            before = json.dumps(prepare[:-1], sort_keys=True)  # one step more: applied to the cached table
            start, steps = (self._prepared[before], prepare[-1:]) if before in self._prepared else (self.frame(), prepare)
            try:
                frame, _ = recode(start, [dict(s) for s in steps])
            except ParameterError as exc:
                raise InputError(str(exc)) from None
            self._prepared = {**{k: v for k, v in self._prepared.items() if k == json.dumps(self.state.prepare,
                                                                                            sort_keys=True)},
                              key: frame}  # the current preparation and the new one only
        return self._prepared[key]

    def page(self, offset: int, limit: int, sort=None, descending=False) -> dict:
        src = self.source
        if src is None:
            raise InputError("no file is open")
        if src.error:
            raise InputError(src.error)
        if src.frame is None:  # still being read: the first rows
            return {**table.page(src.head, offset, limit), "total": None, "loading": True}
        return {**table.page(self.prepared(), offset, limit, sort, descending), "loading": False}

    def summaries(self) -> list | None:
        """Column summaries of the prepared table (None while the file is read); a prepared
        column's summary is computed again when asked."""
        src = self.source
        if src is None or src.frame is None:
            return None
        base = self._summaries.get(())
        if base is None:
            if self.jobs.running("open"):
                return None
            base = self._summaries[()] = table.summaries(src.frame)  # the background summaries were cancelled
        if not self.state.prepare:
            return base
        key = json.dumps(self.state.prepare, sort_keys=True)
        if key not in self._summaries:
            changed = {s["column"] for s in self.state.prepare}
            known = {s["name"]: s for s in base if s["name"] not in changed}
            self._summaries = {(): base, key: table.summaries(self.prepared(), known=known)}
        return self._summaries[key]

    def suggestions(self) -> dict:
        found = self.summaries()
        return {} if found is None else {c: {"role": r, "why": why} for c, (r, why) in table.suggest_roles(found).items()}

    # --- preparation and roles ----------------------------------------------------------------
    def add_step(self, step: dict, version) -> None:
        """One recoding step more (:mod:`probanon.categorical.recoding`), checked by applying it."""
        from ..categorical.recoding import step_from_dict

        if not isinstance(step.get("column"), str) or not step["column"]:
            raise InputError("step: 'column' must name a column")
        try:
            parsed = step_from_dict(step)
        except (ParameterError, TypeError, ValueError) as exc:
            raise InputError(f"step: {exc}") from None
        if getattr(parsed, "path", None) is not None:  # a hierarchy file: absolute, a regular file
            where = Path(parsed.path).expanduser().resolve()
            if not where.is_file():
                raise InputError(f"step: hierarchy file {parsed.path}: no such file")
            parsed = replace(parsed, path=str(where))
        new = (*self.state.prepare, parsed.to_dict())
        self.prepared(new)  # refuses a step that does not apply, with its message
        self._commit(version, replace(self.state, prepare=new, what=f"{parsed.column}: {parsed.describe()}"))

    def set_roles(self, roles: dict, version) -> None:
        """The roles of the columns (those not named have none), checked as far as they go; the full
        check (every column a role) is made when a strategy is applied."""
        columns = list(self.prepared().columns)
        if not all(isinstance(c, str) and (r is None or isinstance(r, str)) for c, r in roles.items()):
            raise InputError("roles: an object {column: role}, roles as texts")
        bad = sorted(r for r in roles.values() if r and r not in methods.ROLES)
        if bad:
            raise InputError(f"unknown role {bad[0]!r} (one of {', '.join(methods.ROLES)})")
        unknown = [c for c in roles if c not in columns]
        if unknown:
            raise InputError(f"column {unknown[0]!r} is not in the table")
        roles = {c: roles[c] for c in columns if roles.get(c)}
        changed = [f"{c} {r}" for c, r in roles.items() if dict(self.state.roles).get(c) != r]
        dropped = [f"{c} none" for c in dict(self.state.roles) if c not in roles]
        if not changed and not dropped:
            return
        what = "roles: " + ", ".join(changed + dropped)
        self._commit(version, replace(self.state, roles=tuple(roles.items()), what=what[:300]))

    def audit(self) -> dict:
        """The pre-release audit of the current roles (:func:`probanon.attacks.audit.audit`): its
        findings by the column they name."""
        from ..attacks.audit import audit

        roles = dict(self.state.roles)
        numeric, categorical = methods.role_columns(roles, "key"), methods.role_columns(roles, "categorical key")
        released = methods.role_columns(roles, "confidential") + methods.role_columns(roles, "keep")
        if not (numeric + categorical) or not released:
            return {"findings": [], "said": "the audit needs keys and released columns"}
        frame = self.prepared()
        found = audit(frame, numeric + categorical, released, nominal=categorical,
                      missing=bool(frame[numeric + categorical].isna().to_numpy().any()))
        return {"findings": [{"column": f.column, "kind": f.kind, "direction": f.direction, "text": f.text,
                              "determining": list(getattr(f, "determining", ()) or ())} for f in found.findings]}

    def risk(self, job: Job, k: int = 3, combinations: int | None = None) -> dict:
        roles = dict(self.state.roles)
        started = time.monotonic()
        out = measures.risk_before(self.prepared(), roles, k, combinations, progress=job.progress)
        out["seconds"] = round(time.monotonic() - started, 3)
        return out

    # --- strategies -----------------------------------------------------------------------------
    def _recipe(self, folder: Path, method: str, params: dict, seed: int, output: str, link, report,
                state: State, source: Source, columns, lacking: bool, input_path=None) -> tuple[str, list]:
        """The recipe of a treatment on ``state`` (its preparation written into ``folder``)."""
        prepare = None
        if state.prepare:
            prepare = "prepare.json"
            (folder / prepare).write_text(methods.prepare_json(state.prepare), encoding="utf-8")
        return methods.recipe(method=method, params=params, source=input_path or source.path, output=output,
                              roles=dict(state.roles), columns=list(columns), seed=seed, prepare=prepare,
                              csv=source.csv, link=link, report=report, missing_keys=lacking,
                              sha256=source.sha256)

    def apply(self, method: str, given: dict, version) -> Job:
        """A strategy: ``method`` with the page's parameters, run by the command line in the
        background; on success a new state holds it (refused if the session changed meanwhile)."""
        params = methods.method_params(method, {n: v for n, v in given.items() if n != "seed"})
        seed = given.get("seed")
        seed = self.seed if seed in (None, "") else seed
        try:
            seed = int(seed)
            if not 0 <= seed <= MAX_SEED:
                raise ValueError
        except (TypeError, ValueError):
            raise InputError(f"seed: a whole number from 0 to {MAX_SEED}") from None
        with self.lock:
            self._check_version(version)
            state, source = self.state, self.source
            frame = self.prepared()
            roles = dict(state.roles)
            methods.check_roles(list(frame.columns), roles)
            number = next(self._numbers)
        folder = Path(tempfile.mkdtemp(prefix=f"s{number}-", dir=self._made("strategies")))
        keys = methods.role_columns(roles, "key") + methods.role_columns(roles, "categorical key")
        lacking = bool(frame[keys].isna().to_numpy().any())
        text, notes = self._recipe(folder, method, params, seed, "release.csv", "link.csv", None, state, source,
                                   frame.columns, lacking)
        (folder / "recipe.toml").write_text(text, encoding="utf-8")
        label = f"{number}. {methods.METHODS[method]['label']}" + (f", k = {params['k']}" if "k" in params else "")
        expected = {c for c in frame.columns if roles.get(c) != "drop"}

        def work(job: Job):
            from ..data import read_table

            started = time.monotonic()
            run_command(job, ["release", "recipe.toml", "--force"], folder)
            job.progress("measuring the release", 0, None)
            release, link = read_table(folder / "release.csv"), pd.read_csv(folder / "link.csv")
            if set(release.columns) != expected:  # what the roles say is released, and nothing else
                raise InputError(f"the release's columns are not those the roles publish (extra: "
                                 f"{sorted(set(release.columns) - expected)}, missing: "
                                 f"{sorted(expected - set(release.columns))})")
            figures = measures.assess_release(frame, release, link, roles, params.get("k"),
                                              probabilistic=methods.METHODS[method]["command"] == "swap")
            strategy = Strategy(number, label, method, tuple(params.items()), seed, str(folder), text, figures,
                                tuple(notes), replace(state, strategies=()), source, tuple(frame.columns), lacking)
            with self.lock:
                if job.cancel.is_set():
                    raise Cancelled("cancelled")
                if self.source is not source or self.state.prepare != state.prepare or self.state.roles != state.roles:
                    raise InputError("the file, its preparation or the roles changed while the strategy ran: apply it "
                                     "again")
                self._commit(None, replace(self.state, strategies=(*self.state.strategies, strategy),
                                           what=f"applied {label}"), _headline(figures))
                self.log[-1]["seconds"] = round(time.monotonic() - started, 3)
            return {"strategy": number, "figures": figures}

        return self.jobs.start("apply", work, where=methods.field_of)

    def _made(self, name: str) -> Path:
        """The session folder's subfolder ``name``, made if needed."""
        (self.folder / name).mkdir(parents=True, exist_ok=True)
        return self.folder / name

    def strategy(self, number: int) -> Strategy:
        for g in self.state.strategies:
            if g.id == number:
                return g
        raise InputError(f"strategy {number} is not in the current state (undone, or never applied)")

    def recipe_text(self, number: int | None = None) -> str:
        """The recipe of strategy ``number`` (default the last one): what ``probanon release`` runs."""
        if not self.state.strategies:
            raise InputError("no strategy applied yet: apply a treatment first")
        return (self.strategy(number) if number is not None else self.state.strategies[-1]).recipe

    def compare_png(self, numbers=None, k: int | None = None) -> bytes:
        """The map of the strategies ``numbers`` (default all) against the required ``k`` (default the
        smallest k they were made for): each point's guarantee is judged at that k."""
        chosen = [g for g in self.state.strategies if numbers is None or g.id in numbers]
        if not chosen:
            raise InputError("no strategy to compare: apply a treatment first")
        if k is None:
            k = min([dict(g.params)["k"] for g in chosen if "k" in dict(g.params)] or [2])
        if isinstance(k, bool) or not isinstance(k, int) or k < 2:
            raise InputError(f"k: a whole number of at least 2, got {k!r}")

        def guarantee(g) -> str:
            probabilistic = methods.METHODS[g.method]["command"] == "swap" and dict(g.params).get("k", 0) >= k
            return "k-anonymous" if g.figures["k_achieved"] >= k else "probabilistic" if probabilistic else "none"

        return measures.comparison_png([{"label": g.label, **g.figures, "guarantee": guarantee(g)} for g in chosen], k)

    def export(self, number: int, folder, name: str, force: bool, version) -> Job:
        """Strategy ``number`` written into ``folder`` (:func:`.recipes.export`)."""
        from .recipes import export

        with self.lock:
            self._check_version(version)
            strategy = self.strategy(number)
            log = list(self.log)
        return export(self, strategy, folder, name, force, log)

    def open_recipe(self, path, version=None) -> Job:
        """Continue from a recipe (:func:`.recipes.read_for_workbench`, checked whole before anything
        changes): its input opened, its preparation and roles set, its treatment applied again with its
        seed. Returns the job applying it."""
        from .recipes import read_for_workbench

        found = read_for_workbench(path)
        load = self.open(found.input, found.csv.get("sep"), found.csv.get("encoding"), version=version)
        if not self.jobs.wait(load, 600) or load.status != "done":
            raise InputError(load.error or f"{found.input}: could not be read")
        for step in found.prepare:
            self.add_step(step, None)
        roles = dict(found.roles)
        if found.keep_other:
            roles.update({c: "keep" for c in self.prepared().columns if c not in roles})
        self.set_roles(roles, None)
        return self.apply(found.method, {**found.params, "seed": found.seed}, None)


def _headline(figures: dict) -> dict:
    return {name: figures[name] for name in ("k_achieved", "sample_uniques", "information_loss", "record_linkage",
                                             "expected_reidentifications") if figures.get(name) is not None}


__all__ = ["Conflict", "State", "Strategy", "Workbench"]
