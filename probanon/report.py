"""Self-contained HTML reports with figures (matplotlib, embedded as PNG)."""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def figure_png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def line_figure(series: dict, xlabel: str, ylabel: str, title: str):
    """A figure with one line per entry of ``series`` ({label: (x, y)})."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for label, (x, y) in series.items():
        ax.plot(x, y, marker="o", label=label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend()
    return fig


#: Text after a flagged figure, so that it reads without colour too (plain text, print, screen readers).
FLAG_MARK = "ABOVE"
#: CSS class of a flagged cell (red background, see :meth:`Report.write`).
FLAG_CLASS = "above"


@dataclass(frozen=True)
class Flagged:
    """A table cell whose figure exceeds what is claimed, e.g. an attack's success rate above the
    claimed bound 1/k: rendered on a red background (class :data:`FLAG_CLASS`) with
    :data:`FLAG_MARK` after the value, which is also its ``str`` (plain-text tables).

    >>> str(Flagged(0.7831))
    '0.7831 ABOVE'
    """

    value: object

    def __str__(self) -> str:
        return f"{_fmt(self.value)} {FLAG_MARK}"


def flag(value, flagged: bool):
    """``value`` as a :class:`Flagged` cell when ``flagged``, else unchanged."""
    return Flagged(value) if flagged else value


def _cell(v) -> str:
    if isinstance(v, Flagged):
        return f'<td class="{FLAG_CLASS}">{html.escape(str(v))}</td>'
    return f"<td>{html.escape(_fmt(v))}</td>"


def html_table(rows: list[dict]) -> str:
    """An HTML table: one row per dict, the first dict's keys as headers; a :class:`Flagged`
    value is rendered as a flagged cell."""
    if not rows:
        return "<p>(no rows)</p>"
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(_cell(v) for v in r.values()) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def text_table(title: str, headers: list[str], rows: list[list]) -> str:
    """An aligned plain-text table (right-aligned columns; a :class:`Flagged` cell reads with its mark)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[j]) for r in cells) for j in range(len(headers))]
    line = lambda r: "  ".join(c.rjust(w) for c, w in zip(r, widths))  # noqa: E731
    out = [title, line(cells[0]), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells[1:]]
    return "\n".join(out)


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


class Report:
    """Sections of text, tables and figures, written as ``index.html`` (figures are also
    saved as PNG files beside it)."""

    def __init__(self, title: str):
        self.title = title
        self.parts: list[str] = []
        self.figures: dict[str, bytes] = {}

    def text(self, heading: str | None, paragraph: str) -> None:
        if heading:
            self.parts.append(f"<h2>{html.escape(heading)}</h2>")
        self.parts.append(f"<p>{html.escape(paragraph)}</p>")

    def table(self, rows: list[dict]) -> None:
        """A table of ``rows`` (:func:`html_table`; :class:`Flagged` values are flagged cells)."""
        self.parts.append(html_table(rows))

    def figure(self, name: str, fig, caption: str) -> None:
        png = figure_png(fig)
        self.figures[name] = png
        data = base64.b64encode(png).decode()
        self.parts.append(
            f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )

    def contents(self, directory) -> dict:
        """{path: text or bytes} of the report in ``directory`` (index.html and the PNGs), for
        :func:`probanon.outputs.write_outputs` (all or nothing)."""
        directory = Path(directory)
        files = {directory / f"{name}.png": png for name, png in self.figures.items()}
        files[directory / "index.html"] = self.page()
        return files

    def page(self) -> str:
        """The HTML page."""
        style = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;}table{border-collapse:collapse}"
                 "td,th{border:1px solid #bbb;padding:.2em .6em;text-align:right}figure{margin:1em 0}"
                 f"td.{FLAG_CLASS}{{background:#f4b4b4;color:#700;font-weight:bold}}")
        return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(self.title)}</title>"
                f"<style>{style}</style></head><body><h1>{html.escape(self.title)}</h1>{''.join(self.parts)}</body></html>")

    def write(self, directory) -> Path:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for path, content in self.contents(directory).items():
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)
        return directory / "index.html"
