"""``probanon release RECIPE.toml``: a whole release from one file (issue 17, point 8).

A recipe names a release command (``microaggregate``, ``swap``, ``recode``, ``suppress``, ``pram``,
``noise``, ``rank-swap``, ``record-swap``), its input and output, and the
command's options under ``[options]``, spelled as on the command line without the dashes
(``keep_order = true`` for ``--keep-order``, ``keys = ["AGI", "FEDTAX"]`` for ``--keys AGI,FEDTAX``)::

    command = "microaggregate"
    input = "census.csv"            # relative to the recipe's folder
    output = "out/census_k5.csv"

    [options]
    method = "mdav"
    k = 5
    keys = ["AFNLWGT", "AGI", "EMCONTRB"]
    confidential = ["FEDTAX"]
    seed = 7
    link = "out/census_k5.link.csv"

The recipe is turned into that command's arguments and run by the command itself (the same
checks, the same messages, nothing written on an error). Beside the output it writes
``<output>.recipe.toml``: the recipe with every option the command resolved (defaults
included), the probanon version and the SHA-256 digest of the input, in the same outputs
written all or nothing. ``report = "DIR"`` (top level) also writes the risk-utility reports of
the release (``probanon report``) into DIR once the release is written (DIR is checked before
any work; the release is matched to its input by the option ``link`` or ``keep_order``). Run again, a resolved recipe refuses an input whose digest differs, so
a release can be repeated and audited exactly.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

from .. import __version__
from ..errors import InputError, ProbanonWarning
from ..recipe import COMMANDS, TOP, digest, read_recipe  # noqa: F401  (re-exported)
from .options import add_input
from .parser import Parser, command, example

#: options of the commands that are not the release's own (the runner's switches, or derived)
NOT_RECIPE = {"command", "func", "input", "output", "outputs", "force", "quiet", "_inputs", "_outputs",
              "_csv_options", "recipe", "report", "extra_outputs"}


def _flag(name: str) -> str:
    return f"-{name}" if len(name) == 1 else "--" + name.replace("_", "-")


def _argv(recipe: dict, folder: Path) -> list[str]:
    """The command line of the recipe (paths relative to the recipe's folder)."""
    here = lambda p: str(folder / p)
    argv = [recipe["command"], here(recipe["input"]), "-o", here(recipe["output"])]
    for name, value in recipe.get("options", {}).items():
        if name in REMOVED:
            raise InputError(REMOVED[name])
        if name in NOT_RECIPE:
            raise InputError(f"option {name!r} is not a recipe option (the recipe names the command, input and "
                             "output itself; 'probanon release --force' overwrites)")
        if isinstance(value, bool):
            argv += [_flag(name)] if value else []
        elif name in REPEATED.get(recipe["command"], ()) and isinstance(value, (list, str)):  # one per item
            for item in [value] if isinstance(value, str) else value:
                argv += [_flag(name), _hierarchy_path(str(item), here) if name == "hierarchy" else str(item)]
        elif isinstance(value, list):
            argv += [_flag(name), ",".join(str(v) for v in value)]
        elif isinstance(value, (str, int, float)):
            value = here(value) if name in PATH_OPTIONS else value
            argv += [_flag(name), str(value)]
        else:
            raise InputError(f"option {name!r}: expected a text, a number, true/false or a list, got {value!r}")
    return argv


#: options that no longer exist, and what replaces them (an old resolved recipe names them all)
REMOVED = {"keep_duplicates": "option 'keep_duplicates' was removed in probanon 0.2.0: MDAV now keeps identical key "
                              "tuples in one group by default (so the published function reproduces the release); "
                              "'split_duplicates = true' is classical MDAV, what 'keep_duplicates = false' was"}

#: options whose values are files, relative to the recipe's folder
PATH_OPTIONS = {"link", "function", "groups", "matrix", "recode", "compare", "prepare"}
#: options given once per item of their list, per command (recode/suppress: probanon.cli.categorical, whose specs
#: hold commas; record-swap's --hierarchy is a comma list)
_RECODING = frozenset({"intervals", "round", "group", "hierarchy", "top_code", "bottom_code"})
REPEATED = {"recode": _RECODING, "suppress": _RECODING}


def _items(value) -> list:
    return [value] if isinstance(value, str) else list(value)


def _hierarchy_path(spec: str, move) -> str:
    """A ``--hierarchy COL=FILE:LEVEL`` spec with its FILE moved by ``move`` (relative paths)."""
    column, sep, rest = spec.partition("=")
    path, colon, level = rest.rpartition(":")
    return f"{column}{sep}{move(path)}{colon}{level}" if sep and colon and path else spec


def resolved(recipe: dict, args, parser_defaults: dict, input_digest: str, folder: Path, home: Path) -> str:
    """TOML of the recipe with every option the command resolved (its defaults included; an
    unset option without default is left out), the version and the input's digest. Its file
    paths are relative to ``home``, the folder it is written in (``folder``: the recipe's), so
    that it runs again where it lies; absolute paths stay absolute."""
    import os

    import tomli_w


    def moved(p: str) -> str:
        return p if Path(p).is_absolute() else os.path.relpath(folder / p, home)

    options = {}
    for name, value in sorted(vars(args).items()):
        if name in NOT_RECIPE or name.startswith("_") or value is None or name not in parser_defaults:
            continue
        options[name] = moved(recipe["options"][name]) if name in PATH_OPTIONS else \
            [_hierarchy_path(str(h), moved) for h in _items(recipe["options"][name])] \
            if name == "hierarchy" and recipe["command"] in REPEATED else value
    top = {"command": recipe["command"], "input": moved(recipe["input"]), "output": moved(recipe["output"]),
           **({"report": moved(recipe["report"])} if "report" in recipe else {}),
           "input_sha256": input_digest, "probanon_version": __version__}
    return "# resolved by probanon release: every option as the command ran it\n" + tomli_w.dumps(
        {**top, "options": options})


def parse_recipe(path, force: bool, parser):
    """(the command's parsed arguments, the resolved recipe's path, a function giving its TOML
    text from the arguments as they finally ran) of the recipe at ``path``: the command line
    parsed by the command's own parser (an unknown or bad option is a one-line
    :class:`InputError` naming the recipe), the input's digest checked against a resolved
    recipe's; ``parser``: probanon's whole parser."""

    path = Path(path)
    recipe = read_recipe(path)
    argv = _argv(recipe, path.parent) + (["--force"] if force else [])
    with Parser.raising(f"{path}: "):
        args = parser.parse_args(argv)
    source = Path(args.input)
    if not source.is_file():
        raise InputError(f"{path}: the input {source} does not exist")
    found = digest(source)
    if recipe.get("input_sha256") not in (None, found):
        raise InputError(f"{path}: the input {source} is not the file this recipe was resolved for (SHA-256 "
                         f"{found[:12]}... against {str(recipe['input_sha256'])[:12]}...)")
    defaults = {a.dest: a.default for a in _subparser(parser, recipe["command"])._actions}
    target = Path(args.output)
    args.report = str(path.parent / recipe["report"]) if "report" in recipe else None
    if args.report and recipe["command"] == "recode" and args.k is None:
        raise InputError(f"{path}: the reports of a recode release state the k it holds: give the option k")
    if args.report and getattr(args, "missing", "raise") == "pattern":
        raise InputError(f"{path}: the report of a release with missing key values is not available yet")
    return args, target.with_name(target.name + ".recipe.toml"), lambda: resolved(recipe, args, defaults, found,
                                                                                   path.parent, target.parent)


def _subparser(parser, command: str):
    for action in parser._subparsers._group_actions:
        if command in getattr(action, "choices", {}):
            return action.choices[command]
    raise InputError(f"unknown command {command!r}")  # read_recipe checked it


def _recipe_reports(run, release) -> dict:
    """The reports of a recipe's release (``report = DIR``), computed before anything is written,
    so that they are written with the release, all or nothing."""
    from .._validation import weights_of
    from ..release import column_list
    from ..release_report import report_contents
    from .options import ordinal_keys, read_input

    original = read_input(run)  # with its --prepare recoding, as the command read it
    order = release.link.sort_values("original_row")["released_row"].to_numpy() - 1
    released = release.data.iloc[order].reset_index(drop=True)
    categorical = column_list(getattr(run, "nominal", None)) + list(ordinal_keys(getattr(run, "ordinal", None)))
    if run.command in ("recode", "suppress"):  # categorical keys, recoded and suppressed
        categorical = column_list(run.keys)
    numeric = [c for c in column_list(run.keys) if c not in categorical]
    weights = weights_of(original, getattr(run, "weights", None), f"{run.input}: ")
    mechanism = "microaggregation" if run.command in ("microaggregate", "recode", "suppress") else run.method
    method = (f"{run.command} --method {run.method}, k = {run.k}" if run.command != "recode"
              else f"global recoding, k = {run.k}")
    if run.command == "suppress":
        method = (f"local suppression ({run.method}), k = {run.k} on "
                  + ("all keys together" if run.combinations is None else f"every {run.combinations} keys")
                  + f", a missing value {'matching any value' if run.missing == 'any' else 'a category of its own'}")
    return report_contents(run.report, original, released, numeric, categorical, run.k, method, weights,
                           probabilistic=run.command == "swap", mechanism=mechanism,
                           confidential=column_list(getattr(run, "confidential", None)),
                           dataset=Path(run.output).name, variables=release.actions)


def cmd_release(args, parser) -> int:
    """``probanon release RECIPE.toml`` (:mod:`probanon.cli.recipe`): the recipe's command, run with
    its outputs and the resolved recipe written together (``parser``: probanon's whole parser); a seed is drawn when the recipe has
    none and recorded, so that the release can be repeated."""
    import secrets

    from .._validation import MAX_SEED
    from ..data import csv_options
    from ..outputs import check_output_folder
    from .options import prepare_outputs

    run, recipe_path, text = parse_recipe(args.recipe, args.force, parser)
    made_by = read_recipe(args.recipe).get("probanon_version")
    if made_by not in (None, __version__):
        warnings.warn(f"{args.recipe} was resolved by probanon {made_by}, this is {__version__}: the release may "
                      "differ from the one it made", ProbanonWarning)
    if getattr(run, "seed", None) is None:
        run.seed = secrets.randbelow(MAX_SEED + 1)
    run.quiet = args.quiet
    run.outputs = prepare_outputs(run)
    run.outputs.add(recipe_path)
    run.extra_outputs = {recipe_path: text()}
    if run.report:
        run.outputs.add_folder(check_output_folder(run.report, ("internal/index.html", "external/index.html"),
                                                   args.force))
        run.report_contents = lambda release: _recipe_reports(run, release)
    with csv_options(getattr(run, "sep", None), getattr(run, "encoding", None)):
        code = run.func(run)
    print(f"resolved recipe written to {recipe_path} (it holds the seed: keep it private, with the link file)",
          file=sys.stderr)
    return code



def add_parser(sub, build_parser) -> None:
    """``probanon release``; ``build_parser``: the function giving probanon's whole parser, with
    which a recipe's command line is read."""
    r = command(sub, "release", epilog=example(
        "# census.toml, beside census.csv:",
        "#   command = \"microaggregate\"",
        "#   input = \"census.csv\"",
        "#   output = \"census_k5.csv\"",
        "#   report = \"census_k5_report\"",
        "#   [options]",
        "#   k = 5",
        "#   keys = [\"AFNLWGT\", \"AGI\", \"EMCONTRB\", \"FEDTAX\", \"STATETAX\"]",
        "#   confidential = [\"PTOTVAL\", \"TAXINC\", \"POTHVAL\", \"INTVAL\", \"PEARNVAL\", \"FICA\",",
        "#                   \"WSALVAL\", \"ERNVAL\"]",
        "#   link = \"census_k5.link.csv\"",
        "probanon release census.toml",
        "probanon release census_k5.csv.recipe.toml --force    # the resolved recipe: the same release, byte for byte"))
    add_input(r, "recipe", table=False, help="the recipe (see probanon.cli.recipe): command, input, output, [options]")
    r.add_argument("--force", action="store_true", help="overwrite existing output files (an input is never overwritten)")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(func=lambda args: cmd_release(args, build_parser()))


__all__ = ["COMMANDS", "add_parser", "cmd_release", "digest", "parse_recipe", "read_recipe"]
