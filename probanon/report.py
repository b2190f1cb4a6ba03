"""Self-contained HTML reports with figures (matplotlib, embedded as PNG)."""

from __future__ import annotations

import base64
import html
import io
import re
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

#: Width of a report page's text column in CSS pixels (``max-width: 60em`` at the browsers' default
#: 16 px font): no figure is wider (:func:`figure_png`), and the page scales an image down to its
#: column anyway (``img {max-width: 100%}``).
PAGE_WIDTH_PX = 960
#: Resolution of the embedded figures; a figure of ``FIGURE_WIDTH`` inches fits the page.
DPI = 110
FIGURE_WIDTH = 8.4


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels of a PNG, read from its IHDR header (bytes 16-24, big-endian)."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def figure_png(fig) -> bytes:
    """The figure as PNG bytes, at most :data:`PAGE_WIDTH_PX` wide: a figure drawn wider (a long
    legend or label widens the tight bounding box) is rendered again at a lower resolution."""
    dpi = DPI
    for _ in range(3):
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
        width = png_size(buf.getvalue())[0]
        if width <= PAGE_WIDTH_PX:
            break
        dpi = dpi * (PAGE_WIDTH_PX - 4) / width
    plt.close(fig)
    return buf.getvalue()


def compact_number(x, _pos=None) -> str:
    """An axis label: 12k for 12,000, 1.5M for 1,500,000, else the shortest form (never "-0")."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= size:
            return _no_negative_zero(f"{x / size:.3g}{suffix}")
    return _no_negative_zero(f"{x:.3g}")


def integer_axis(axis, values) -> None:
    """Ticks of an axis whose values are integers (k, n...) on integers only: at the values
    themselves when there are at most 12 of them, else wherever an integer locator puts them."""
    distinct = sorted(set(float(v) for v in values))
    if len(distinct) <= 12:
        axis.set_ticks(distinct)
        axis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:.0f}"))
    else:
        axis.set_major_locator(MaxNLocator(integer=True))


def _integral(values) -> bool:
    v = np.asarray(values, dtype=float)
    return v.size > 0 and bool(np.all(np.isfinite(v) & (v == np.round(v))))


def line_figure(series: dict, xlabel: str, ylabel: str, title: str):
    """A figure with one line per entry of ``series`` ({label: (x, y)}); an x axis whose values
    are all integers (k) has integer ticks (:func:`integer_axis`)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    xs = []
    for label, (x, y) in series.items():
        ax.plot(x, y, marker="o", label=label)
        xs.extend(x)
    if _integral(xs):
        integer_axis(ax.xaxis, xs)
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
    claimed bound 1/k: rendered on a red background (class :data:`FLAG_CLASS`) with ``mark``
    (:data:`FLAG_MARK` unless stated, e.g. "BELOW" for a k achieved under the required k) after
    the value and, when given, the ``limit`` it was held against beside it; the same text is its
    ``str`` (plain-text tables).

    >>> str(Flagged(0.7831))
    '0.7831 ABOVE'
    >>> str(Flagged(0.7831, limit="0.2000 = 1/5"))
    '0.7831 (limit 0.2000 = 1/5) ABOVE'
    """

    value: object
    limit: object = None
    mark: str = FLAG_MARK

    def text(self, number=None) -> str:
        """The cell's text, the value formatted by ``number`` (default :func:`_fmt`)."""
        value = (number or _fmt)(self.value)
        limit = "" if self.limit is None else f" (limit {self.limit})"
        return f"{value}{limit} {self.mark}"

    def __str__(self) -> str:
        return self.text()


def flag(value, flagged: bool, limit=None, mark: str = FLAG_MARK):
    """``value`` as a :class:`Flagged` cell (held against ``limit``) when ``flagged``, else unchanged."""
    return Flagged(value, limit, mark) if flagged else value


def _no_negative_zero(text: str) -> str:
    """"-0", "-0.00", "-0k": a negative number rounded to zero is written as zero."""
    return text[1:] if re.fullmatch(r"-0(\.0*)?(e[+-]?\d+)?[kMG%]?", text) else text


def fixed(value, decimals: int) -> str:
    """``value`` with ``decimals`` decimals, never "-0.00".

    >>> fixed(-0.0001, 2), fixed(12.345, 1)
    ('0.00', '12.3')
    """
    return _no_negative_zero(f"{value:.{decimals}f}")


#: Most decimals a column of a table gets from :func:`column_decimals`.
MAX_DECIMALS = 6


def _decimals_of(v: float) -> int:
    """Decimals of ``v`` written with four significant digits (0.0375 -> 4, 12.5 -> 1, 9.0 -> 0)."""
    if v == 0:
        return 0
    d = int(3 - np.floor(np.log10(abs(v))))
    text = f"{v:.{max(d, 0)}f}".rstrip("0")
    return len(text.split(".")[1]) if "." in text else 0


def column_decimals(values) -> int | None:
    """Decimals shared by every float of a table column (consistent precision): those that write
    each float with four significant digits, but no more than four significant digits of the
    column's largest fractional magnitude give, nor :data:`MAX_DECIMALS` (12.345678 and 9.0 ->
    12.35 and 9.00; 0.4677, 0.0375 and 1.0 -> 4 decimals; 13.64 and 0.001711 -> 13.64 and 0.00);
    0 when every float is whole, None when the column holds no float."""
    floats = [float(v) for v in values if isinstance(v, (float, np.floating)) and np.isfinite(v)]
    if not floats:
        return None
    fractional = [abs(v) for v in floats if v != round(v)]
    if not fractional:
        return 0
    largest = max(fractional)  # whole numbers (a count, a share of 1.0) need no decimals of their own
    cap = int(min(max(3 - np.floor(np.log10(largest)), 0), MAX_DECIMALS))
    return min(cap, max(_decimals_of(v) for v in floats))


def shared_decimals(figures: dict) -> dict:
    """``figures`` ({name: number}) as texts with the decimals they share (:func:`column_decimals`):
    the figures of one row of a table whose rows are in different units (a variable's mean, min, max)."""
    values = {name: float(v) for name, v in figures.items()}
    decimals = column_decimals(list(values.values())) or 0
    return {name: fixed(v, decimals) for name, v in values.items()}


def _cell(v, decimals: int | None) -> str:
    number = _fmt if decimals is None else (lambda x: _number(x, decimals))
    if isinstance(v, Flagged):
        return f'<td class="{FLAG_CLASS}">{html.escape(v.text(number))}</td>'
    return f"<td>{html.escape(number(v))}</td>"


def _number(v, decimals: int) -> str:
    return fixed(v, decimals) if isinstance(v, (float, np.floating)) and np.isfinite(v) else _fmt(v)


def html_table(rows: list[dict], decimals: dict | None = None) -> str:
    """An HTML table: one row per dict, the first dict's keys as headers; a :class:`Flagged`
    value is rendered as a flagged cell. The floats of a column share their decimals
    (``decimals[column]`` when given, else :func:`column_decimals`); ints and text are written
    as they are; no cell reads "-0"."""
    if not rows:
        return "<p>(no rows)</p>"
    columns = list(rows[0])
    decimals = dict(decimals or {})
    for c in columns:
        if c not in decimals:
            values = [r.get(c) for r in rows]
            decimals[c] = column_decimals([v.value if isinstance(v, Flagged) else v for v in values])
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(_cell(r.get(c), decimals[c]) for c in columns) + "</tr>" for r in rows)
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
    """A scalar: four significant digits for a float, never "-0"; None as an empty cell."""
    if v is None:
        return ""
    return _no_negative_zero(f"{v:.4g}") if isinstance(v, (float, np.floating)) else str(v)


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

    def table(self, rows: list[dict], decimals: dict | None = None) -> None:
        """A table of ``rows`` (:func:`html_table`; :class:`Flagged` values are flagged cells),
        scrolled sideways inside the page's column when wider than it."""
        self.parts.append(f'<div class="wide">{html_table(rows, decimals)}</div>')

    def links(self, heading: str | None, paragraph: str, links: dict) -> None:
        """A paragraph and a list of links ({text: relative address})."""
        self.text(heading, paragraph)
        items = "".join(f'<li><a href="{html.escape(href)}">{html.escape(text)}</a></li>' for text, href in links.items())
        self.parts.append(f"<ul>{items}</ul>")

    def figure(self, name: str, fig, caption: str) -> None:
        """The figure, embedded as a PNG at most :data:`PAGE_WIDTH_PX` wide and scaled down to the
        page's column by the browser when the column is narrower."""
        png = figure_png(fig)
        self.figures[name] = png
        data = base64.b64encode(png).decode()
        width, height = png_size(png)
        self.parts.append(
            f'<figure><img alt="{html.escape(caption)}" width="{width}" height="{height}" '
            f'style="max-width:100%;height:auto" src="data:image/png;base64,{data}">'
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
        style = (f"body{{font-family:sans-serif;max-width:{PAGE_WIDTH_PX}px;margin:2em auto;padding:0 1em}}"
                 "table{border-collapse:collapse}div.wide{max-width:100%;overflow-x:auto}"
                 "td,th{border:1px solid #bbb;padding:.2em .6em;text-align:right}"
                 "td:first-child,th:first-child{text-align:left}figure{margin:1em 0}"
                 "img{max-width:100%;height:auto}"
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
