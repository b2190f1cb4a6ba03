"""probanon.report: tables with cells flagged above a claimed bound (issue 14, point 4): a red cell in
the HTML page and a text marker, so that a flagged figure also reads without colour."""

import re

from probanon.report import FLAG_CLASS, FLAG_MARK, Flagged, Report, flag, html_table


def test_plain_tables_render_with_one_precision_per_column():
    """Issue 39, point 12: the floats of a column share their decimals (four significant digits of
    the column's largest value): 9.0 beside 12.345678 reads 9.00, not 9."""
    rows = [{"method": "MDAV", "k": 5, "IL %": 12.345678}, {"method": "<PCL>", "k": 10, "IL %": 9.0}]
    assert html_table(rows) == (
        "<table><thead><tr><th>method</th><th>k</th><th>IL %</th></tr></thead><tbody>"
        "<tr><td>MDAV</td><td>5</td><td>12.35</td></tr>"
        "<tr><td>&lt;PCL&gt;</td><td>10</td><td>9.00</td></tr></tbody></table>")
    assert html_table([]) == "<p>(no rows)</p>"


def test_flagged_cells_are_coloured_and_marked():
    rows = [{"intruder": "learned", "success": Flagged(0.78314), "bound": 0.2},
            {"intruder": "exact", "success": flag(0.19, False), "bound": 0.2}]
    table = html_table(rows)
    assert FLAG_CLASS == "above" and FLAG_MARK == "ABOVE"
    assert '<td class="above">0.7831 ABOVE</td>' in table  # the value formatted like any float cell
    assert "<td>0.1900</td>" in table and table.count('class="above"') == 1  # the column's decimals
    assert str(Flagged("0.783 / 0.200")) == "0.783 / 0.200 ABOVE"  # plain-text tables
    assert '<td class="above">a &lt; b ABOVE</td>' in html_table([{"x": Flagged("a < b")}])
    assert isinstance(flag(1, True), Flagged) and flag(1, True).value == 1 and flag("x", False) == "x"


def test_report_page_styles_flagged_cells(tmp_path):
    rep = Report("flags")
    rep.table([{"a": Flagged(1.5), "b": 2}])
    page = rep.write(tmp_path).read_text()
    rule = re.search(r"td\.above\{([^}]*)\}", page).group(1)
    assert "background:#" in rule
    assert '<td class="above">1.5 ABOVE</td>' in page
