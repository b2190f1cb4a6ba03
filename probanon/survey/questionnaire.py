"""The printable questionnaire of an untrusted-mode survey (issue 18.1): the tree of questions of a
"decision-tree" specification as a self-contained HTML page that a respondent follows on paper.

The page holds no script and loads nothing: the questions, numbered in the order of the tree
(depth first, "yes" first), each with where "yes" and "no" lead, either another question or
"write down cell number N"; then the released values of every cell, so that respondents see
what their cell will publish. It states the specification's digest, to be compared with the one
in the invitation letter. Print it from any browser (print styles included).

Question texts: a numeric key, "Is your <label> under <t>?" (t in its shortest decimal form);
a categorical key, "Is your <label> one of the following?" and the list of categories. The
label of a key is its column name unless ``labels`` gives one.
"""

from __future__ import annotations

import html

import numpy as np

from ..errors import ParameterError

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
    text = {name: labels.get(name, name) for name in names}
    nodes = function.rule["nodes"]
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
            key = esc(text[names[node["column"]]])
            parts.append(f'<li id="q{number}" value="{number}">')
            if "categories" in node:
                parts.append(f'<p class="question">Is your {key} one of the following?</p>')
                parts.append('<ul class="categories">' + "".join(f"<li>{esc(str(c))}</li>" for c in node["categories"])
                             + "</ul>")
            else:
                parts.append(f'<p class="question">Is your {key} under {number_text(node["threshold"])}?</p>')
            parts.append(f'<p class="answer">Yes: {_target(nodes, numbers, node["left"])}</p>')
            parts.append(f'<p class="answer">No: {_target(nodes, numbers, node["right"])}</p>')
            parts.append("</li>")
        parts.append("</ol>")
    parts.append("<h2>What each cell publishes</h2>")
    parts.append("<p>The values of the cell replace yours in the published data.</p>")
    parts.append("<table><thead><tr><th>cell</th>" + "".join(f"<th>{esc(text[n])}</th>" for n in names)
                 + "</tr></thead><tbody>")
    for cell, row in enumerate(function.centroids):
        cells = "".join(f"<td>{esc(number_text(v) if isinstance(v, (int, float, np.number)) else str(v))}</td>"
                        for v in row)
        parts.append(f"<tr><td>{cell}</td>{cells}</tr>")
    parts += ["</tbody></table>", "</body>", "</html>", ""]
    return "\n".join(parts)
