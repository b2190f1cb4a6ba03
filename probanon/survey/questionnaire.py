"""The printable questionnaire of an untrusted-mode survey (issue 18.1): the tree of questions of a
"decision-tree" specification as a self-contained HTML page that a respondent follows on paper.

The page holds no script and loads nothing: the questions, numbered in the order of the tree
(depth first, "yes" first), each with where "yes" and "no" lead, either another question or
"write down cell number N"; then the released values of every cell, so that respondents see
what their cell will publish. It states the specification's digest, to be compared with the one
in the invitation letter. Print it from any browser (print styles included).

Question texts (:func:`question`), read as a person asks them: a numeric key, "Is your age
under 35?" (t in its shortest decimal form); one category, "Is your sex Female?"; a few
categories, "Is your race Black or Other?", "Is your race one of Black, Other or White?"; many, or categories that hold a comma,
"Is your region one of the following?" and the list; an ordinal key, "Is your education
secondary or lower?" (with its levels listed when they are words). The label of a key is
``labels``' (``--label``), else the specification's variable label (a design from an SPSS or
Stata file), else its column name; a category reads as its value label when the specification
has one.

A tree splits while both halves stay safe cells, so it has about N / n_min cells: on a large
population a long questionnaire (:func:`check_length`, beyond :data:`MAX_QUESTIONS` questions).
"""

from __future__ import annotations

import html
import warnings

import numpy as np

from ..errors import ParameterError, ProbanonWarning

STYLE = """
body { font-family: Georgia, serif; max-width: 46em; margin: 2em auto; padding: 0 1em; line-height: 1.45; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 2em; }
ol.questions > li { margin: 0 0 1em 0; break-inside: avoid; page-break-inside: avoid; }
p.question { font-weight: bold; margin: 0 0 .3em 0; }
ul.categories { margin: .2em 0 .4em 0; }
p.answer { margin: 0 0 0 1.5em; }
code.digest { word-break: break-all; }
table { border-collapse: collapse; } th, td { border: 1px solid #888; padding: .2em .5em; text-align: right; }
@media print { body { margin: 0; max-width: none; } a { color: inherit; text-decoration: none; } }
"""


def number_text(value: float) -> str:
    """A threshold as a person writes it: the shortest decimal form, never in scientific notation
    (35, 0.25, 1200000)."""
    return np.format_float_positional(float(value), trim="-")


def _questions(nodes: list) -> dict:
    """Question number (1, 2, ...) of every split node, in node order (node 0 is question 1)."""
    numbers = {}
    for i, node in enumerate(nodes):
        if "cell" not in node:
            numbers[i] = len(numbers) + 1
    return numbers


def _target(nodes: list, numbers: dict, i: int) -> str:
    node = nodes[i]
    if "cell" in node:
        return f'write down cell number <strong class="cell">{node["cell"]}</strong>.'
    return f'go to <a href="#q{numbers[i]}">question {numbers[i]}</a>.'


#: a tree with more questions than this makes a long printed questionnaire (a warning says how to
#: shorten it): a few pages, each respondent answering about log2(questions) of them
MAX_QUESTIONS = 40
#: at most this many categories are listed in the question itself ("one of A, B or C")
INLINE_CATEGORIES = 6


def _your(label: str) -> str:
    """"your age" from the label "Age", "Your age" or "age" (an acronym such as "BMI" keeps its case)."""
    text = label.strip()
    if text.lower().startswith("your "):
        text = text[5:].lstrip()
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        text = text[0].lower() + text[1:]
    return f"your {text}"


def _listed(words: list) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def question(label: str, node: dict, ordinal: bool = False, shown=None) -> tuple[str, list]:
    """The question of a split node ("yes" goes left) and the categories listed below it (none
    when the question names them): module docstring. ``shown``: a category as the respondent
    reads it (its value label)."""
    who = _your(label)
    shown = shown or (lambda v: number_text(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v))
    if "categories" not in node:
        return f"Is {who} under {number_text(node['threshold'])}?", []
    words = [shown(c) for c in node["categories"]]
    if len(words) == 1:
        return f"Is {who} {words[0]}?", []
    if ordinal:  # the levels up to the cut: named by the last, listed unless they are numbers
        numbers = all(w == number_text(c) for w, c in zip(words, node["categories"])
                      if isinstance(c, (int, float)) and not isinstance(c, bool)) and \
            all(isinstance(c, (int, float)) for c in node["categories"])
        return f"Is {who} {words[-1]} or lower?", [] if numbers else words
    if len(words) <= INLINE_CATEGORIES and not any("," in w or " or " in w for w in words):
        return f"Is {who} {'one of ' * (len(words) > 2)}{_listed(words)}?", []
    return f"Is {who} one of the following?", words


def _depths(nodes: list) -> list:
    """The number of questions on the way to each cell."""
    out, stack = [], [(0, 0)]
    while stack:
        i, depth = stack.pop()
        if "cell" in nodes[i]:
            out.append(depth)
        else:
            stack += [(nodes[i]["left"], depth + 1), (nodes[i]["right"], depth + 1)]
    return out


def check_length(spec: dict, function) -> None:
    """A :class:`~probanon.errors.ProbanonWarning` when a tree specification asks more than
    :data:`MAX_QUESTIONS` questions, with how to shorten it (nothing otherwise). A tree splits a
    node while both halves are safe cells (at least n_min records for a constant pi), so it has
    about N / n_min cells and one question fewer: fewer questions need larger cells (a larger k,
    or a lower --risk: both raise n_min), fewer or coarser keys (fewer admissible cuts), or a
    smaller population."""
    if function.kind != "decision-tree":
        return
    nodes = function.rule.nodes
    questions = sum("cell" not in node for node in nodes)
    if questions <= MAX_QUESTIONS:
        return
    depths = _depths(nodes)
    sizes = [cell["size"] for cell in spec["cells"]]
    records = spec["guarantee"]["records"]
    needed = -(-records // (MAX_QUESTIONS + 1))
    warnings.warn(f"the tree asks {questions:,} questions ({len(sizes):,} cells of {min(sizes):,} or more records; "
                  f"a respondent answers {min(depths)} to {max(depths)} of them): more than {MAX_QUESTIONS} make a "
                  f"long printed questionnaire. To shorten it: fewer keys (--columns), coarser keys (recode them, e.g. "
                  f"age in ten-year bands), or larger cells: a larger -k or a lower --risk (at most {MAX_QUESTIONS} "
                  f"questions need cells of about {records:,} / {MAX_QUESTIONS + 1} = {needed:,} records)",
                  ProbanonWarning, stacklevel=2)


def _spec_labels(spec: dict) -> tuple[dict, dict]:
    """The variable labels and value labels ({key: {category: text}}) a specification carries."""
    labels = spec.get("labels") or {}
    values = {key: {code: text for code, text in pairs} for key, pairs in labels.get("values", {}).items()}
    return dict(labels.get("columns", {})), values


def questionnaire_html(verified, labels=None, title: str | None = None) -> str:
    """The page of a verified "decision-tree" specification (:class:`.spec.VerifiedSpec`)."""
    function = verified.function
    if function.kind != "decision-tree":
        raise ParameterError(f"the specification's function is of kind {function.kind!r}: only a tree design "
                             "(survey design --method tree) can be followed on paper")
    names = list(function.columns) if function.columns is not None else \
        [f"value {j + 1}" for j in range(len(function.standardizer.mean_))]
    labels = dict(labels or {})
    unknown = sorted(set(labels) - set(names))
    if unknown:
        raise ParameterError(f"label for {unknown[0]!r}, which is not a key of the specification")
    variable_labels, value_labels = _spec_labels(verified.spec)
    text = {name: labels.get(name) or variable_labels.get(name) or name for name in names}
    ordinal = set(function.encoding.ordinal) if function.encoding is not None else set()

    def shown_by(name):  # a key's value as the respondent reads it: its value label, else the value
        coded = value_labels.get(name, {})
        return lambda v: str(coded[v]) if v in coded else number_text(v) if isinstance(v, (int, float, np.number)) \
            and not isinstance(v, bool) else str(v)

    nodes = function.rule.nodes
    numbers = _questions(nodes)
    esc = html.escape
    title = title or "Find your cell"
    parts = [
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f"<title>{esc(title)}</title>", f"<style>{STYLE}</style>", "</head>", "<body>",
        f"<h1>{esc(title)}</h1>",
        "<p>Answer the questions below in order, starting with question 1. Each answer tells you where to go "
        "next. When you are told to write down a cell number, write only that number on your answer sheet: "
        "do not write down your answers to these questions, they stay with you.</p>",
        f'<p>This questionnaire belongs to the survey specification with digest <code class="digest">'
        f"{esc(verified.digest)}</code>. Check that your invitation letter shows the same digest.</p>",
    ]
    if not numbers:  # one cell: nothing to ask
        parts.append('<p class="answer">Everybody is in the same cell: write down cell number '
                     '<strong class="cell">0</strong>.</p>')
    else:
        parts.append('<ol class="questions">')
        for i, number in numbers.items():
            node = nodes[i]
            name = names[node["column"]]
            asked, listed = question(text[name], node, name in ordinal, shown_by(name))
            parts.append(f'<li id="q{number}" value="{number}">')
            parts.append(f'<p class="question">{esc(asked)}</p>')
            if listed:
                parts.append('<ul class="categories">' + "".join(f"<li>{esc(c)}</li>" for c in listed) + "</ul>")
            parts.append(f'<p class="answer">Yes: {_target(nodes, numbers, node["left"])}</p>')
            parts.append(f'<p class="answer">No: {_target(nodes, numbers, node["right"])}</p>')
            parts.append("</li>")
        parts.append("</ol>")
    parts.append("<h2>What each cell publishes</h2>")
    parts.append("<p>The values of the cell replace yours in the published data.</p>")
    parts.append("<table><thead><tr><th>cell</th>" + "".join(f"<th>{esc(text[n])}</th>" for n in names)
                 + "</tr></thead><tbody>")
    shown = [shown_by(name) for name in names]
    for cell, row in enumerate(function.centroids):
        cells = "".join(f"<td>{esc(show(v))}</td>" for v, show in zip(row, shown))
        parts.append(f"<tr><td>{cell}</td>{cells}</tr>")
    parts += ["</tbody></table>", "</body>", "</html>", ""]
    return "\n".join(parts)
