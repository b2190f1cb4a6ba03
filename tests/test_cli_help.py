"""Every command explains itself (issue 39, point 11): the whole ``probanon`` parser is walked; every
subcommand has a one-line help, every option of every command a help text, and every command's
``--help`` ends with a worked example whose command lines parse."""

import argparse
import shlex

import pytest

from probanon.cli import build_parser

#: argparse's own actions, documented by argparse itself
OWN = (argparse._HelpAction, argparse._VersionAction)


def _commands(parser, path=("probanon",)):
    """(path, parser, its help in the parent's list) of every command, leaves and groups."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*path, name), sub, helps.get(name)
                yield from _commands(sub, (*path, name))


def _is_leaf(parser) -> bool:
    return not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)


COMMANDS = list(_commands(build_parser()))
LEAVES = [(path, parser) for path, parser, _ in COMMANDS if _is_leaf(parser)]
IDS = [" ".join(path[1:]) for path, _ in LEAVES]


def _example_lines(epilog: str) -> list[str]:
    """The command lines of an example: `` \\`` continuations joined, comments and blanks left out."""
    lines, current = [], ""
    for line in epilog.splitlines()[1:]:
        current += line.strip()
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        if current.startswith("probanon "):
            lines.append(current)
        current = ""
    return lines


def test_the_walk_finds_every_command():
    assert len(LEAVES) >= 30
    assert {"microaggregate", "risk", "survey plan", "km check", "collector publish", "serve"} <= set(IDS)


@pytest.mark.parametrize("path, parser, help", COMMANDS, ids=[" ".join(c[0][1:]) for c in COMMANDS])
def test_every_command_is_listed_with_a_help(path, parser, help):
    assert help and help != argparse.SUPPRESS and help.strip(), path


@pytest.mark.parametrize("path, parser", LEAVES, ids=IDS)
def test_every_option_has_a_help_text(path, parser):
    missing = [a.option_strings[0] if a.option_strings else a.dest for a in parser._actions
               if not isinstance(a, OWN) and (not a.help or not a.help.strip() or a.help == argparse.SUPPRESS)]
    assert not missing, f"{' '.join(path)}: no help for {', '.join(missing)}"


EVERY = [(("probanon",), build_parser())] + [(path, parser) for path, parser, _ in COMMANDS]


@pytest.mark.parametrize("path, parser", EVERY, ids=[" ".join(path) for path, _ in EVERY])
def test_every_help_ends_with_a_worked_example(path, parser):
    epilog = parser.epilog or ""
    assert epilog.startswith("example:"), f"{' '.join(path)}: no example"
    assert parser.format_help().rstrip().endswith(epilog.rstrip().splitlines()[-1].strip())
    own = [line for line in _example_lines(epilog) if line.startswith(" ".join(path) + " ")]  # itself or its own
    assert own, f"{' '.join(path)}: the example never runs {' '.join(path)}"


def _argv(line: str) -> list[str]:
    """The words of a shell command line, up to a redirection or a pipe, without its comment."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words = list(lexer)
    cut = next((i for i, word in enumerate(words) if word and set(word) <= set("();<>|&")), len(words))
    return words[:cut]


@pytest.mark.parametrize("path, parser", EVERY, ids=[" ".join(path) for path, _ in EVERY])
def test_every_example_parses(path, parser):
    """Parsing opens no file, so the example's files need not exist."""
    for line in _example_lines(parser.epilog or ""):
        argv = _argv(line)
        try:
            args = build_parser().parse_args(argv[1:])
        except SystemExit as exc:
            pytest.fail(f"{line!r} does not parse (exit {exc.code})")
        assert callable(args.func)
