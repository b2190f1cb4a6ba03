"""Reports an office can hand over (issue 39, point 12): figures within the page, one precision per
column and no "-0", integer k axes, log counts for zero-heavy keys, a risk-utility map with
references when nothing is compared, before/after tables of categorical keys, limits beside
flagged values, an external report that names the dataset, date, record count, every variable with
its treatment, the method and its guarantee. Small synthetic data; the checks read the HTML and the
PNG headers as a browser would, not probanon's own objects."""

import html
import re
import struct

import numpy as np
import pandas as pd
import pytest

from probanon.attacks import GUARANTEES
from probanon.cli import main
from probanon.report import html_table, line_figure
from probanon.release_report import _histograms, external_report, internal_report, risk_utility_map

KEYS = ["age", "income", "hours", "debt", "rent", "gifts", "trips"]  # 7 keys: more than one row of panels
DATE = "2031-02-03"


def _png_width(png: bytes) -> int:
    """A PNG's width from its IHDR chunk (PNG spec, 11.2.2: the first chunk after the 8-byte signature)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    return struct.unpack(">I", png[16:20])[0]


def _page_width(page: str) -> float:
    """The body's max-width in CSS pixels (an em is the browsers' default 16 px)."""
    value, unit = re.search(r"body\{[^}]*max-width:([\d.]+)(px|em)", page).groups()
    return float(value) * (16 if unit == "em" else 1)


def _text(page: str) -> str:
    """The visible text of a page: no style, no tags, no embedded images."""
    page = re.sub(r"<style>.*?</style>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


@pytest.fixture(scope="module")
def data():
    """Records with 7 numeric keys (one mostly zero), a categorical key and a confidential column."""
    rng = np.random.default_rng(3)
    n = 240
    frame = pd.DataFrame({c: rng.gamma(2.0, 10.0, n).round(1) for c in KEYS})
    frame["gifts"] = np.where(rng.random(n) < 0.6, 0.0, frame["gifts"])  # 60% zeros: zero-heavy
    frame["region"] = rng.choice(["north", "south", "east", "west", "centre"], n, p=[.4, .3, .15, .1, .05])
    frame["spending"] = rng.normal(100, 20, n).round(2)
    frame["id"] = np.arange(n)
    return frame


@pytest.fixture(scope="module")
def release(data):
    """An MDAV release of the numeric keys at k = 4, the categorical key released as its group's
    most frequent category (so the release is 4-anonymous on all the keys, and the categories' counts change)."""
    from probanon.microagg import MDAV

    model = MDAV(4).fit(data[KEYS].to_numpy(np.float64))
    Y, labels = model.transform(data[KEYS].to_numpy(np.float64)), np.asarray(model.labels_).reshape(-1)
    mode = data.groupby(labels)["region"].agg(lambda v: v.value_counts().index[0])
    return data.drop(columns="id").assign(**{c: Y[:, j] for j, c in enumerate(KEYS)}, region=mode[labels].to_numpy())


@pytest.fixture(scope="module")
def internal(data, release):
    return internal_report(data, release, KEYS, ["region"], 4, "MDAV, k = 4").page()


@pytest.fixture(scope="module")
def external(data, release):
    return external_report(data, release, KEYS, ["region"], 4, "MDAV, k = 4", dataset="survey_k4.csv",
                           confidential=["spending"], date=DATE).page()


def test_every_figure_fits_the_page(internal):
    page_width = _page_width(internal)
    images = re.findall(r"<img[^>]*>", internal)
    assert len(images) == 2
    css_rule = re.search(r"(?:^|[};])img\{[^}]*max-width:100%", internal)
    for tag in images:
        png = __import__("base64").b64decode(re.search(r'src="data:image/png;base64,([^"]+)"', tag).group(1))
        assert _png_width(png) <= page_width, (_png_width(png), page_width)
        assert css_rule or "max-width:100%" in tag


def test_one_panel_per_key_in_rows(data, release):
    fig = _histograms(data[KEYS].to_numpy(float), release[KEYS].to_numpy(float), KEYS)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title().split(" (")[0] for ax in panels] == KEYS  # every key, none cut off
    rows = sorted({round(ax.get_position().y0, 3) for ax in panels})
    assert len(rows) >= 2 and max(sum(round(ax.get_position().y0, 3) == y for ax in panels) for y in rows) <= 3


def test_zero_heavy_keys_have_a_log_count_axis(data, release):
    from probanon.release_report import ZERO_HEAVY

    share = (data["gifts"] == 0).mean()
    assert share > ZERO_HEAVY and all((data[c] == 0).mean() <= ZERO_HEAVY for c in KEYS if c != "gifts")
    fig = _histograms(data[KEYS].to_numpy(float), release[KEYS].to_numpy(float), KEYS)
    scales = {ax.get_title().split(" (")[0]: ax.get_yscale() for ax in fig.axes if ax.get_visible()}
    assert scales == {c: "log" if c == "gifts" else "linear" for c in KEYS}


def _negative_zeros(page: str) -> list:
    return re.findall(r"(?<![\w.\-])-0(?:\.0+)?(?![\w.])", _text(page))


def test_no_negative_zero_in_the_internal_report(internal):
    assert not _negative_zeros(internal)  # means unchanged by MDAV: differences of about -1e-15


def test_no_negative_zero_in_the_external_report(external):
    assert not _negative_zeros(external)


def test_a_table_column_has_one_precision():
    table = html_table([{"rate": 0.4677}, {"rate": 0.0375}, {"rate": 0.04877}, {"rate": 1.0}, {"rate": -1e-9}])
    cells = re.findall(r"<td>(.*?)</td>", table)
    assert cells == ["0.4677", "0.0375", "0.0488", "1.0000", "0.0000"]


def test_k_axes_have_integer_ticks():
    ks = [2, 3, 4, 5, 7, 10, 15, 20]
    fig = line_figure({"MDAV": (ks, np.linspace(1, 14, len(ks)))}, "k", "IL", "IL against k")
    ticks = fig.axes[0].get_xticks()
    assert all(t == int(t) for t in ticks) and set(ks) <= set(ticks)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert all(re.fullmatch(r"\d+", label) for label in labels if label)


def test_the_map_has_references_without_compare(data, internal):
    """No --compare: the map still shows the original and MDAV at k = 2, 3, 5, 10 (and the required
    4), each the IL and record linkage of that release, checked against independent formulas."""
    from probanon.microagg import MDAV
    from probanon.release_report import references

    X = data[KEYS].to_numpy(np.float64)
    refs = references(X, 4)
    assert [r.k for r in refs] == [None, 2, 3, 4, 5, 10]
    z = (X - X.mean(axis=0)) / X.std(axis=0)
    for r in refs:
        Y = X if r.k is None else MDAV(r.k).fit_transform(X)
        zy = (Y - X.mean(axis=0)) / X.std(axis=0)
        assert r.information_loss == pytest.approx(100 * ((z - zy) ** 2).sum() / (z ** 2).sum(), abs=1e-9)
        nearest = ((zy[None, :, :] - z[:, None, :]) ** 2).sum(axis=2)  # target i against released row j
        ties = nearest == nearest.min(axis=1, keepdims=True)
        assert r.record_linkage == pytest.approx(np.mean(np.diag(ties) / ties.sum(axis=1)), abs=1e-9)
    fig = risk_utility_map([], 4, refs)
    drawn = [tuple(np.round(np.column_stack(line.get_data()), 9).ravel()) for line in fig.axes[0].lines]
    mdav = tuple(np.round([[r.information_loss, r.record_linkage] for r in refs if r.k], 9).ravel())
    assert mdav in drawn
    assert "the original and MDAV on the same numeric keys" in internal and "k = 2, 3, 4, 5, 10" in internal


def test_categorical_keys_have_before_after_tables(data, release, internal):
    section = internal[internal.index("Categories of region"):]
    table = re.search(r"<table>(.*?)</table>", section, re.S).group(1)
    rows = {cells[0]: cells[1:] for cells in (re.findall(r"<td>(.*?)</td>", r) for r in
                                              re.findall(r"<tr>(.*?)</tr>", table)[1:])}
    before, after = data["region"].value_counts(), release["region"].value_counts()
    assert set(rows) == set(before.index)
    for category, (original, released, change) in rows.items():
        assert (int(original), int(released)) == (before[category], after.get(category, 0))
        assert int(change) == after.get(category, 0) - before[category]


def test_flagged_values_carry_their_limit(data):
    """A 'release' that is the original itself: k achieved 1 below the required 4, record linkage
    1 above 1/4: each flagged cell says the limit it breaks."""
    page = internal_report(data, data.copy(), KEYS, [], 4, "nothing done").page()
    flagged = re.findall(r'<td class="above">(.*?)</td>', page)
    assert len(flagged) >= 2
    assert any(cell.startswith("1 (limit &gt;= 4) BELOW") for cell in flagged), flagged
    assert any("(limit &lt;= 0.2500 (1/k)) ABOVE" in cell for cell in flagged), flagged
    assert all("(limit " in cell for cell in flagged), flagged


def test_the_external_report_describes_the_release(data, release, external):
    text = _text(external)
    assert "survey_k4.csv" in text and DATE in text and f"{len(release):,} records" in text
    assert "MDAV, k = 4" in text
    assert html.unescape(GUARANTEES["microaggregation"].bounded) in text
    assert html.unescape(GUARANTEES["microaggregation"].not_bounded) in text
    table = external[external.index("<h2>Variables</h2>"):]
    rows = dict(re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", table))
    assert set(release.columns) <= set(rows)
    for c in KEYS + ["region"]:
        assert rows[c].startswith("key: masked"), (c, rows[c])
    assert rows["spending"] == "confidential: released unchanged"
    assert rows["id"] == "removed (not released)"


def test_the_external_report_lists_the_release_summary(tmp_path):
    """'probanon release' with a report: the variables and treatments are the release's own summary."""
    from probanon.release_report import report_contents

    frame = pd.DataFrame({"a": np.arange(12.0), "b": np.arange(12.0) % 3, "c": np.ones(12)})
    actions = {"a": "key: replaced by its group mean", "b": "key: replaced by its group mean",
               "c": "confidential: kept unchanged", "name": "direct identifier: removed"}
    files = report_contents(tmp_path, frame, frame, ["a", "b"], [], 2, "MDAV, k = 2", dataset="x.csv",
                            variables=actions)
    page = files[tmp_path / "external" / "index.html"]
    rows = dict(re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td></tr>", page))
    assert rows == actions and "x.csv: 12 records, 3 variables released" in _text(page)


def test_report_command_names_its_dataset(tmp_path, data, release):
    original, released = tmp_path / "original.csv", tmp_path / "release_k4.csv"
    data.to_csv(original, index=False)
    release.to_csv(released, index=False)
    rows = np.arange(1, len(data) + 1)
    pd.DataFrame({"original_row": rows, "released_row": rows}).to_csv(tmp_path / "link.csv", index=False)
    assert main(["report", str(original), str(released), "--keys", ",".join(KEYS), "--categorical-keys", "region",
                 "--link", str(tmp_path / "link.csv"), "-k", "4", "--method", "MDAV, k = 4", "--confidential", "spending",
                 "-o", str(tmp_path / "out")]) == 0
    page = (tmp_path / "out" / "external" / "index.html").read_text()
    assert "About this release: release_k4.csv" in page and "240 records" in page
