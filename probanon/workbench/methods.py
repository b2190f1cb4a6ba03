"""The workbench's treatments and the roles of its columns, as the release commands take them.

A treatment is a release command with options (:data:`METHODS`: what the page shows as a form);
:func:`recipe` turns the workbench's state (the file, its preparation, the roles, a treatment
with its parameters) into the recipe ``probanon release`` runs (:mod:`probanon.cli.recipe`), so
that the workbench has no second implementation of any method, check or writer: a strategy is
that recipe run by the command line, and exported it is the same recipe.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import tomli_w

from ..errors import InputError
from ..release import assign_roles

#: the roles of the page (sdcApp's, plus keep): name -> what it means
ROLES = {
    "key": "key, numeric (microaggregated, swapped, perturbed)",
    "categorical key": "key, categorical (recoded, suppressed, post-randomised; a group's mode under microaggregation)",
    "confidential": "confidential: released per record, measured for attribute disclosure",
    "weight": "sampling weight (risk and information loss weighted; released unchanged)",
    "household": "household id (households kept together; released renumbered)",
    "stratum": "stratum (groups formed within it; released unchanged)",
    "drop": "dropped: a direct identifier, or anything not to publish",
    "keep": "kept: published unchanged, not a key",
}

#: options of each command taking a role ("keys" takes both kinds of key unless "nominal" exists)
ROLE_OPTIONS = {
    "microaggregate": {"keys", "nominal", "confidential", "drop", "strata", "household", "weights"},
    "suppress": {"keys", "confidential", "drop", "strata", "weights"},
    "recode": {"keys", "confidential", "drop", "strata", "weights"},
    "pram": {"keys", "confidential", "drop", "strata", "household"},
    "swap": {"keys", "confidential", "drop", "strata", "household"},
    "noise": {"keys", "confidential", "drop"},
    "record-swap": {"keys", "confidential", "drop", "household"},
    "rank-swap": {"keys", "confidential", "drop"},
}


#: the commands whose release a recipe reports on (the k-anonymous ones: probanon.cli.recipe)
REPORTED = ("microaggregate", "swap", "suppress", "recode")


def _int(name, low=1, default=None, label=None, help=""):
    return {"name": name, "type": "integer", "min": low, "default": default, "label": label or name, "help": help}


def _float(name, low=None, high=None, default=None, label=None, help=""):
    return {"name": name, "type": "number", "min": low, "max": high, "default": default, "label": label or name,
            "help": help}


def _columns(name, label, help="", required=False):
    return {"name": name, "type": "columns", "default": None, "required": required, "label": label, "help": help}


def _choice(name, choices, default, label=None, help=""):
    return {"name": name, "type": "choice", "choices": list(choices), "default": default, "label": label or name,
            "help": help}


K = _int("k", 2, 3, "k", "every released key combination is shared by at least k records")
ACCEPT = {"name": "accept_risk", "type": "boolean", "default": False, "label": "accept the audit's findings",
          "help": "publish even when the pre-release audit finds a key determined by released columns"}

#: the treatments: id -> label, command, fixed options, parameters (the forms of the page)
METHODS = {
    "mdav": {"label": "Microaggregation: MDAV", "command": "microaggregate", "fixed": {"method": "mdav"},
             "params": [K, ACCEPT]},
    "vmdav": {"label": "Microaggregation: V-MDAV", "command": "microaggregate", "fixed": {"method": "vmdav"},
              "params": [K, _float("gamma", 0, None, 0.2, "gamma", "V-MDAV's extension gain"), ACCEPT]},
    "pcl": {"label": "Microaggregation: PCL (paper 3)", "command": "microaggregate", "fixed": {"method": "pcl"},
            "params": [K, ACCEPT]},
    "mdav-t": {"label": "Microaggregation: MDAV, groups t-close on the confidential columns", "command": "microaggregate",
               "fixed": {"method": "mdav"}, "sensitive": True,
               "params": [K, _float("t_closeness", 0, 1, 0.3, "t", "largest distance (EMD) of a group's confidential "
                                    "values from the file's"), ACCEPT]},
    "mdav-l": {"label": "Microaggregation: MDAV, groups l-diverse on the confidential columns",
               "command": "microaggregate", "fixed": {"method": "mdav"}, "sensitive": True,
               "params": [K, _int("l_diversity", 2, 2, "l", "distinct (or entropy) values of each confidential column "
                                  "per group"), _choice("l_kind", ("distinct", "entropy"), "distinct", "l-diversity"),
                          ACCEPT]},
    "ranking": {"label": "Microaggregation: individual ranking", "command": "microaggregate",
                "fixed": {"method": "ranking"}, "params": [K, ACCEPT]},
    "recode": {"label": "Global recoding (the data step's recoding), checked at k", "command": "recode", "fixed": {},
               "params": [K, ACCEPT]},
    "suppress": {"label": "Local suppression", "command": "suppress", "fixed": {},
                 "params": [K, _int("combinations", 1, None, "key combinations of at most",
                                    "empty: all keys together (sdcMicro's kAnon without combs)"),
                            _choice("missing", ("any", "category"), "any", "a missing value",
                                    "any: matches every value (sdcMicro); category: a value of its own"), ACCEPT]},
    "pram": {"label": "PRAM (invariant)", "command": "pram", "fixed": {},
             "params": [_float("pd", 0, 1, 0.8, "pd", "smallest probability of keeping a category"),
                        _float("alpha", 0, 1, 0.5, "alpha", "share of the invariant matrix's mixing"), ACCEPT]},
    "swap": {"label": "Swapping within groups of k (paper 2)", "command": "swap", "fixed": {},
             "params": [K, _choice("method", ("mdav-swap", "mdav-swap-informed", "ir-swap", "mdav-id"), "mdav-swap",
                                   "method"), ACCEPT]},
    "noise": {"label": "Additive noise", "command": "noise", "fixed": {},
              "params": [_choice("method", ("additive", "correlated", "correlated2"), "additive", "method"),
                         _float("noise", 0, None, 150, "noise (% of each key's standard deviation)"), ACCEPT]},
    "record-swap": {"label": "Targeted record swapping of households (sdcMicro's recordSwap)", "command": "record-swap",
                    "fixed": {},
                    "params": [_columns("hierarchy", "geography (columns, top level first)", "e.g. region,district",
                                        required=True),
                               _columns("risk_variables", "risk variables (columns)", "with the geography: a record's "
                                        "cell"),
                               _int("k", 2, 3, "k", "households in cells of fewer than k records are swapped first"),
                               _float("swaprate", 0, 1, 0.05, "swap rate", "share of households swapped"),
                               _columns("similar", "similarity profile (columns)", "donors share these"), ACCEPT]},
    "rank-swap": {"label": "Rank swapping", "command": "rank-swap", "fixed": {},
                  "params": [_float("p", 0, 100, 5, "p (% of the records: the largest rank distance)"), ACCEPT]},
}


def method_params(method: str, given: dict) -> dict:
    """The parameters of ``method`` from the page (``given``), checked for type and range with a
    one-line :class:`InputError` naming the field (``field: message``); defaults for the others;
    an empty optional field left out."""
    if method not in METHODS:
        raise InputError(f"method: unknown treatment {method!r} (one of {', '.join(METHODS)})")
    out = {}
    unknown = sorted(set(given) - {p["name"] for p in METHODS[method]["params"]} - {"seed"})
    if unknown:
        raise InputError(f"{unknown[0]}: not a parameter of {METHODS[method]['label']}")
    for p in METHODS[method]["params"]:
        name, value = p["name"], given.get(p["name"], p["default"])
        if value in (None, "", []):
            if p["default"] is not None or p.get("required"):
                raise InputError(f"{name}: give a value")
            continue
        if p["type"] == "columns":
            value = [c.strip() for c in value.split(",")] if isinstance(value, str) else value
            if not isinstance(value, list) or not all(isinstance(c, str) and c and _plain_name(c) for c in value):
                raise InputError(f"{name}: column names separated by commas (names without commas, spaces around "
                                 "them or a leading '-')")
        elif p["type"] == "boolean":
            if not isinstance(value, bool):
                raise InputError(f"{name}: expected true or false")
        elif p["type"] == "choice":
            if value not in p["choices"]:
                raise InputError(f"{name}: one of {', '.join(p['choices'])}, got {value!r}")
        else:
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise InputError(f"{name}: expected a number, got {value!r}") from None
            if not math.isfinite(number) or (p["type"] == "integer" and number != int(number)):
                raise InputError(f"{name}: expected {'a whole number' if p['type'] == 'integer' else 'a number'}, "
                                 f"got {value!r}")
            if p.get("min") is not None and number < p["min"]:
                raise InputError(f"{name}: must be at least {p['min']}, got {value!r}")
            if p.get("max") is not None and number > p["max"]:
                raise InputError(f"{name}: must be at most {p['max']}, got {value!r}")
            value = int(number) if p["type"] == "integer" else number
        out[name] = value
    return out


def _plain_name(c: str) -> bool:
    """A column name the command line's comma-separated lists can carry."""
    return "," not in c and c == c.strip() and not c.startswith("-")


def role_columns(roles: dict, role: str) -> list:
    return [c for c, r in roles.items() if r == role]


def check_roles(columns, roles: dict) -> dict:
    """``roles`` ({column: role}) checked as the command line checks its options
    (:func:`probanon.release.assign_roles`: the same one-line messages; a column without a role is
    refused, never published by default) and for the roles the page knows; returns them."""
    bad = sorted(r for r in roles.values() if r not in ROLES)
    if bad:
        raise InputError(f"unknown role {bad[0]!r} (one of {', '.join(ROLES)})")
    unknown = [c for c in roles if c not in columns]
    if unknown:
        raise InputError(f"column {unknown[0]!r} is not in the table")
    for role in ("weight", "household"):
        if len(role_columns(roles, role)) > 1:
            raise InputError(f"one {role} column at most, got {', '.join(role_columns(roles, role))}")
    listed = [c for c, r in roles.items() if r not in ("keep", "weight", "household")]
    for c in listed:  # the command line's lists are comma-separated and its options start with '-'
        if not _plain_name(c):
            raise InputError(f"column {c!r}: a name with a comma, spaces around it or a leading '-' cannot be "
                             "given to the command line as a key, confidential, stratum or dropped column; rename "
                             "it in the file")
    kept = [c for c in columns if roles.get(c) != "keep"]
    assign_roles(kept, role_columns(roles, "key") + role_columns(roles, "categorical key"),
                 role_columns(roles, "confidential"), role_columns(roles, "drop"),
                 weights=(role_columns(roles, "weight") or [None])[0],
                 strata=role_columns(roles, "stratum"), household=(role_columns(roles, "household") or [None])[0])
    return roles


def role_options(command: str, columns, roles: dict) -> tuple[dict, list]:
    """(the command's role options, notes on roles it does not take: those columns are released
    unchanged) for ``roles``, checked (:func:`check_roles`)."""
    check_roles(columns, roles)
    takes = ROLE_OPTIONS[command]
    numeric, categorical = role_columns(roles, "key"), role_columns(roles, "categorical key")
    options, notes, other = {}, [], role_columns(roles, "keep")
    if "nominal" in takes:
        options["keys"], options["nominal"] = numeric, categorical
    else:
        options["keys"] = numeric + categorical
    for role, name in (("confidential", "confidential"), ("drop", "drop"), ("stratum", "strata")):
        if role_columns(roles, role):
            if name in takes:
                options[name] = role_columns(roles, role)
            else:
                other += role_columns(roles, role)
                notes.append(f"{command} takes no {role}: {', '.join(role_columns(roles, role))} released unchanged")
    for role, name in (("weight", "weights"), ("household", "household")):
        for c in role_columns(roles, role):
            if name in takes:
                options[name] = c
            else:
                other.append(c)
                notes.append(f"{command} takes no {role}: {c} released unchanged")
    options = {name: value for name, value in options.items() if value not in ([], None)}
    if other:
        options["keep_other"] = True
    return options, notes


def recipe(*, method: str, params: dict, source: Path, output: str, roles: dict, columns, seed: int,
           prepare: str | None, csv: dict, link: str | None = "link.csv", report: str | None = None,
           missing_keys: bool = False, sha256: str | None = None) -> tuple[str, list]:
    """(the TOML recipe of a treatment, notes): ``source`` the input file (absolute), ``output``
    and ``link`` relative to the recipe's folder, ``prepare`` the preparation file's name (or
    None), ``csv`` the input's separator and encoding, ``report`` a reports folder;
    ``missing_keys``: the keys lack values (microaggregation then fits by missing-value pattern)."""
    spec = METHODS[method]
    options, notes = role_options(spec["command"], list(columns), roles)
    if spec.get("sensitive"):  # t-closeness / l-diversity: on the confidential columns
        if not options.get("confidential"):
            raise InputError("roles: give the columns whose values groups must spread the role confidential")
        options["sensitive"] = list(options["confidential"])
    if spec["command"] == "record-swap":  # the geography and risk variables are its keys already
        named = {c for name in ("hierarchy", "risk_variables", "similar") for c in params.get(name) or ()}
        options["keys"] = [c for c in options.get("keys", []) if c not in named]
        if not options["keys"]:
            del options["keys"]
    options.update(spec["fixed"])
    options.update({name: value for name, value in params.items() if value is not False})
    if spec["command"] == "microaggregate" and missing_keys:
        options["missing"] = "pattern"
    options["seed"] = int(seed)
    if link:
        options["link"] = link
    if prepare:  # global recoding's steps are the command's own recoding; elsewhere a preparation
        options["recode" if spec["command"] == "recode" else "prepare"] = prepare
    for name in ("sep", "encoding"):
        if csv.get(name) and csv[name] != {"sep": ",", "encoding": "utf-8"}[name]:
            options[name] = csv[name]
    top = {"command": spec["command"], "input": str(source), "output": output}
    if sha256:  # the command refuses the file if it changed since the workbench read it
        top["input_sha256"] = sha256
    if report and spec["command"] in REPORTED:
        top["report"] = report
    return "# made by the probanon workbench: run it with 'probanon release THIS.toml'\n" + tomli_w.dumps(
        {**top, "options": options}), notes


def prepare_json(steps) -> str:
    """The preparation file (``--prepare``) of the recoding ``steps`` (dictionaries)."""
    return json.dumps(list(steps), indent=1, allow_nan=False) + "\n"


def field_of(exc) -> str | None:
    """The page's field a message names ("k: ...", "--k ...", "-k ..."), or None."""
    text = str(exc)
    head = text.split(":", 1)[0].strip()
    if head in ("k", "seed", "folder", "name", "method", "file", "path", "recipe", "step", "roles", "strategy",
                "params") or head in {p["name"] for m in METHODS.values() for p in m["params"]}:
        return head
    for flag, name in (("-k ", "k"), ("k =", "k"), ("--combinations", "combinations"), ("--pd", "pd"),
                       ("--alpha", "alpha"), ("--noise", "noise"), ("--gamma", "gamma"), ("-p ", "p"),
                       ("without a role", "roles"), ("no key variables", "roles"), ("role", "roles")):
        if flag in text:
            return name
    return None


__all__ = ["METHODS", "ROLES", "check_roles", "field_of", "method_params", "prepare_json", "recipe", "role_options"]
