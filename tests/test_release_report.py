"""probanon report (issue 17, point 7): the internal report (viewed in headless Chromium, its
figures rendered) and the publishable one, which holds none of the original records."""

import re

import pandas as pd
import pytest
from helpers import DATA
from service_support import chromium

from probanon.cli import main

KEYS = "AFNLWGT,AGI,EMCONTRB"


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    census = DATA / "census.csv"
    for method in ("mdav", "ranking"):
        assert main(["microaggregate", str(census), "-o", str(tmp / f"{method}.csv"), "-k", "5", "--keys", KEYS,
                     "--keep-other", "--link", str(tmp / f"{method}.link.csv"), "--method", method, "--quiet"]) == 0
    assert main(["report", str(census), str(tmp / "mdav.csv"), "--keys", KEYS, "--link", str(tmp / "mdav.link.csv"),
                 "-k", "5", "--method", "MDAV, k = 5", "--mechanism", "microaggregation", "--confidential",
                 "FEDTAX,PTOTVAL", "--compare",
                 f"ranking={tmp / 'ranking.csv'},{tmp / 'ranking.link.csv'}", "-o", str(tmp / "out")]) == 0
    return tmp / "out"


def test_internal_report_holds_risk_utility_and_the_map(reports):
    page = (reports / "internal" / "index.html").read_text()
    for text in ("k achieved on the keys", "sample uniques", "records violating 5-anonymity", "record linkage",
                 "interval disclosure", "empirical re-identification", "The attack suite (the mechanism known)",
                 "claimed bound", "Information loss", "Risk-utility map", "Attribute disclosure (no bound claimed)",
                 "group pins within 10%"):
        assert text in page, text
    assert (reports / "internal" / "attribute_disclosure.png").stat().st_size > 10_000
    assert (reports / "internal" / "risk_utility_map.png").stat().st_size > 10_000
    assert (reports / "internal" / "histograms.png").stat().st_size > 10_000


def test_external_report_holds_none_of_the_original_records(reports):
    page = (reports / "external" / "index.html").read_text()
    assert "<img" not in page and "k = 5" in page and "at least 5 released records" in page
    original = pd.read_csv(DATA / "census.csv")
    text = re.sub("<[^>]+>", " ", re.sub(r"<style>.*?</style>", " ", page, flags=re.DOTALL))
    text = re.sub(r"\b\d{4}-\d{2}-\d{2}\b", " ", text)  # the report's date (issue 39): no record's value
    numbers = set(re.findall(r"\d+(?:\.\d+)?", text))
    values = {f"{v:g}" for v in original.to_numpy().ravel()} | {str(v) for v in original.to_numpy().ravel()}
    leaked = {n for n in numbers if n in values and len(n.replace(".", "")) >= 4}  # no value of 4+ digits
    assert not leaked, leaked


def test_internal_report_renders_in_a_browser(reports, tmp_path):
    for driver in chromium():
        driver.get((reports / "internal" / "index.html").resolve().as_uri())
        images = driver.find_elements("tag name", "img")
        assert len(images) == 3  # histograms, the attribute disclosure of the confidential columns, the map
        assert all(driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 300", img)
                   for img in images)
        # issue 39, point 12: no figure wider than the page's column, none cut off at its right edge
        body = driver.execute_script("return document.body.getBoundingClientRect().right")
        assert all(driver.execute_script("return arguments[0].getBoundingClientRect().right", img) <= body + 0.5
                   for img in images)
        shot = tmp_path / "internal.png"
        assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 5_000


@pytest.mark.parametrize("extra, fragment", [(["--keys", "AGI,NOPE"], "'NOPE' is not in both tables"),
                                             (["--keys", KEYS, "--compare", "oops"], "expected LABEL=RELEASED")])
def test_bad_report_arguments(tmp_path, capsys, extra, fragment):
    census = DATA / "census.csv"
    out = tmp_path / "out"
    assert main(["report", str(census), str(census), "--by-position", *extra, "-o", str(out)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0], err
    assert not out.exists()


def test_a_swapping_release_is_reported_as_probabilistic(tmp_path):
    census = DATA / "census.csv"
    released, link, out = tmp_path / "swap.csv", tmp_path / "link.csv", tmp_path / "out"
    assert main(["swap", str(census), "-o", str(released), "-k", "5", "--method", "mdav-swap", "--keys", KEYS,
                 "--confidential", "FEDTAX", "--keep-other", "--link", str(link), "--seed", "2"]) == 0
    assert main(["report", str(census), str(released), "--keys", KEYS, "--link", str(link), "-k", "5",
                 "--probabilistic", "--method", "MDAV-SWAP, k = 5", "-o", str(out)]) == 0
    assert "Probabilistic 5-anonymity" in (out / "external" / "index.html").read_text()
