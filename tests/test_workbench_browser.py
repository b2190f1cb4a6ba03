"""The workbench in a real browser (issue 44): Debian's Chromium walks sdcApp's workflow on the CASC
census and on UCI Adult (open, recode, set roles, see risk, apply two strategies, compare, undo one,
export), the exported release is compared byte for byte with what ``probanon release`` makes from
the exported recipe, bad input through the page gives the command line's message beside its field
and changes nothing, and a screenshot of every step is written to build/workbench-screenshots/."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from helpers import SHARED_DATA
from service_support import chromium

By = pytest.importorskip("selenium.webdriver.common.by").By
Select = pytest.importorskip("selenium.webdriver.support.ui").Select
WebDriverWait = pytest.importorskip("selenium.webdriver.support.ui").WebDriverWait
pytest.importorskip("fastapi")

from probanon.workbench.server import running  # noqa: E402

SHOTS = Path(__file__).resolve().parents[1] / "build" / "workbench-screenshots"
WAIT = 180


@pytest.fixture(scope="module")
def browser():
    yield from chromium({"browser": "ALL"})


@pytest.fixture
def bench(tmp_path):
    with running(folder=tmp_path / "session", seed=11) as (base, token, wb):
        yield base, token, wb


def start(driver, base, token):
    driver.set_window_size(1280, 800)
    driver.get(f"{base}/?token={token}")
    WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, "file-name").text == "no file open")


class Shots:
    def __init__(self, driver, name):
        self.driver, self.name, self.n = driver, name, 0
        SHOTS.mkdir(parents=True, exist_ok=True)

    def __call__(self, step: str) -> None:
        self.n += 1
        path = SHOTS / f"{self.name}_{self.n:02d}_{step}.png"
        self.driver.save_screenshot(str(path))
        assert path.stat().st_size > 5000


def tab(driver, step):
    driver.find_element(By.CSS_SELECTOR, f'nav .step[data-step="{step}"]').click()


def typed(driver, element_id, text):
    box = driver.find_element(By.ID, element_id)
    box.clear()
    box.send_keys(text)


def idle(driver, timeout=WAIT):
    """Wait until no job runs (the progress area hidden)."""
    time.sleep(0.2)
    WebDriverWait(driver, timeout).until(lambda d: not d.find_element(By.ID, "job").is_displayed()
                                         and d.find_element(By.ID, "treat-apply").is_enabled()
                                         and d.find_element(By.ID, "export-button").is_enabled())


def text_of(driver, element_id):
    return driver.find_element(By.ID, element_id).text


def open_file(driver, path):
    typed(driver, "open-path", str(path))
    driver.find_element(By.ID, "open-button").click()
    WebDriverWait(driver, WAIT).until(lambda d: "records" in d.find_element(By.ID, "file-name").text
                                      and "reading" not in d.find_element(By.ID, "file-name").text)
    WebDriverWait(driver, WAIT).until(lambda d: "columns" in d.find_element(By.ID, "summaries-status").text)


def add_step(driver, kind, column, value):
    Select(driver.find_element(By.ID, "recode-kind")).select_by_value(kind)
    Select(driver.find_element(By.ID, "recode-column")).select_by_value(column)
    typed(driver, "recode-value", value)
    before = len(driver.find_elements(By.CSS_SELECTOR, "#prepare-list li"))
    driver.find_element(By.ID, "recode-add").click()
    WebDriverWait(driver, 30).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#prepare-list li")) == before + 1)


def set_roles(driver, roles: dict, default: str):
    tab(driver, "roles")
    WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#roles-table select"))
    for sel in driver.find_elements(By.CSS_SELECTOR, "#roles-table select"):
        Select(sel).select_by_value(roles.get(sel.get_attribute("data-column"), default))
    driver.find_element(By.ID, "roles-save").click()
    WebDriverWait(driver, 30).until(lambda d: "roles saved" in d.find_element(By.ID, "message").text)


def measure_risk(driver, k):
    tab(driver, "risk")
    typed(driver, "risk-k", str(k))
    driver.find_element(By.ID, "risk-button").click()
    WebDriverWait(driver, WAIT).until(lambda d: "k achieved" in d.find_element(By.ID, "risk-out").text)
    return text_of(driver, "risk-out")


def apply(driver, treatment, **params):
    tab(driver, "treat")
    Select(driver.find_element(By.ID, "treat-method")).select_by_value(treatment)
    for name, value in params.items():
        element = driver.find_element(By.ID, f"param-{name}")
        if element.tag_name == "select":
            Select(element).select_by_value(str(value))
        else:
            typed(driver, f"param-{name}", str(value))
    before = len(driver.find_elements(By.CSS_SELECTOR, "#strategies-table tr"))
    driver.find_element(By.ID, "treat-apply").click()
    idle(driver)
    return before


def strategies(driver) -> int:
    return max(0, len(driver.find_elements(By.CSS_SELECTOR, "#strategies-table tr")) - 1)


def compare(driver):
    tab(driver, "compare")
    driver.find_element(By.ID, "compare-button").click()
    WebDriverWait(driver, WAIT).until(lambda d: d.execute_script(
        "const i = document.getElementById('compare-map'); return !i.hidden && i.complete && i.naturalWidth > 300;"))
    driver.execute_script("document.getElementById('compare-map').scrollIntoView()")


def export(driver, folder, name):
    tab(driver, "export")
    typed(driver, "export-folder", str(folder))
    typed(driver, "export-name", name)
    driver.find_element(By.ID, "export-button").click()
    WebDriverWait(driver, WAIT).until(lambda d: "written into" in d.find_element(By.ID, "export-out").text
                                      or d.find_element(By.ID, "error-export").text)
    assert "written into" in text_of(driver, "export-out"), text_of(driver, "error-export")


def same_as_release_command(folder: Path, name: str, elsewhere: Path) -> None:
    """``probanon release`` run on the exported recipe (copied with its preparation to another
    folder) writes the same bytes as the export."""
    elsewhere.mkdir()
    for item in ("recipe.toml", "prepare.json"):
        if (folder / item).exists():
            shutil.copyfile(folder / item, elsewhere / item)
    done = subprocess.run([sys.executable, "-m", "probanon.cli", "release", "recipe.toml", "--quiet"], cwd=elsewhere,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert (elsewhere / name).read_bytes() == (folder / name).read_bytes()
    assert (elsewhere / "link.csv").read_bytes() == (folder / "link.csv").read_bytes()


def test_census_whole_workflow(browser, bench, tmp_path):
    base, token, wb = bench
    driver, shot = browser, Shots(browser, "census")
    start(driver, base, token)
    shot("start")
    source = SHARED_DATA / "casc" / "census.csv"
    original = source.read_bytes()
    # a wrong file: the reader's message beside the path, nothing opened
    typed(driver, "open-path", str(tmp_path / "notes.txt"))
    driver.find_element(By.ID, "open-button").click()
    WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, "error-path").text)
    assert "unknown file type '.txt'" in text_of(driver, "error-path")
    assert text_of(driver, "file-name") == "no file open"
    shot("wrong_file")
    open_file(driver, source)
    assert "1,080 records" in text_of(driver, "file-name")
    assert len(driver.find_elements(By.CSS_SELECTOR, "#data-table tbody tr")) == 50
    first = driver.find_elements(By.CSS_SELECTOR, "#data-table tbody tr")[0].text.split()
    assert first[1] == str(pd.read_csv(source).iloc[0, 0])  # the file's first record, first column
    shot("data")
    add_step(driver, "top", "PTOTVAL", "q0.99")  # recode: top-coding a column released unchanged
    shot("recoded")
    keys = ["AFNLWGT", "AGI", "EMCONTRB", "FEDTAX", "STATETAX"]
    # a column without a role blocks the release with the command line's message
    set_roles(driver, {c: "key" for c in keys} | {"TAXINC": ""}, "confidential")
    apply(driver, "mdav", k=5)
    said = text_of(driver, "error-apply")
    assert "columns without a role: TAXINC" in said and strategies(driver) == 0
    shot("no_role_refused")
    set_roles(driver, {c: "key" for c in keys}, "confidential")
    shot("roles")
    risk = measure_risk(driver, 5)
    assert "sample uniques\n1,080" in risk or "sample uniques 1,080" in risk  # every census record is unique
    shot("risk")
    # an impossible k: the command's message beside the field, no strategy added
    apply(driver, "mdav", k=5000)
    assert "k = 5000 is larger than the number of records (1080)" in text_of(driver, "error-k")
    assert strategies(driver) == 0
    shot("impossible_k")
    apply(driver, "mdav", k=5)
    apply(driver, "swap", k=5, method="mdav-swap")
    assert strategies(driver) == 2, (text_of(driver, "error-apply"), text_of(driver, "message"))
    table = text_of(driver, "strategies-table")
    assert "MDAV" in table and "Swapping" in table
    shot("two_strategies")
    compare(driver)
    shot("compare")
    driver.find_element(By.ID, "undo").click()
    WebDriverWait(driver, 30).until(lambda d: strategies(d) == 1)
    shot("undone")
    folder = tmp_path / "export"
    export(driver, folder, "census_k5.csv")
    shot("export")
    for name in ("census_k5.csv", "link.csv", "recipe.toml", "prepare.json", "census_k5.csv.recipe.toml",
                 "report/internal/index.html", "report/external/index.html", "steps.json"):
        assert (folder / name).is_file(), name
    assert "Workbench step log" in (folder / "report/internal/index.html").read_text()
    release = pd.read_csv(folder / "census_k5.csv")
    assert release.groupby(keys).size().min() >= 5
    assert release["PTOTVAL"].max() <= pd.read_csv(source)["PTOTVAL"].quantile(0.99) + 1e-9  # the preparation
    same_as_release_command(folder, "census_k5.csv", tmp_path / "again")
    # the strategy shown is the release exported: the same bytes
    preview = Path(wb.state.strategies[0].folder) / "release.csv"
    assert preview.read_bytes() == (folder / "census_k5.csv").read_bytes()
    assert source.read_bytes() == original  # the original is never modified
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "favicon" not in e["message"]
              and "the server responded with a status of 4" not in e["message"]]
    assert not errors, errors


def test_adult_whole_workflow(browser, bench, tmp_path):
    base, token, wb = bench
    driver, shot = browser, Shots(browser, "adult")
    start(driver, base, token)
    source = SHARED_DATA / "adult" / "adult.csv"
    open_file(driver, source)
    assert "48,842 records" in text_of(driver, "file-name")
    shot("data")
    add_step(driver, "intervals", "age", "10")  # numbers to intervals
    add_step(driver, "group", "race", "Amer-Indian-Eskimo=Other; Asian-Pac-Islander=Other")
    shot("recoded")
    keys = ["age", "sex", "race", "marital-status", "relationship"]
    set_roles(driver, {c: "categorical key" for c in keys} | {"occupation": "confidential", "income": "confidential"},
              "keep")
    shot("roles")
    risk = measure_risk(driver, 3)
    assert "k achieved" in risk
    shot("risk")
    apply(driver, "suppress", k=3, missing="category")  # a suppressed value a category: classes of equal tuples
    apply(driver, "suppress", k=10, combinations=3)
    assert strategies(driver) == 2, text_of(driver, "error-apply")
    shot("two_strategies")
    compare(driver)
    shot("compare")
    driver.find_element(By.ID, "undo").click()
    WebDriverWait(driver, 30).until(lambda d: strategies(d) == 1)
    driver.find_element(By.ID, "redo").click()
    WebDriverWait(driver, 30).until(lambda d: strategies(d) == 2)
    driver.find_element(By.ID, "undo").click()
    WebDriverWait(driver, 30).until(lambda d: strategies(d) == 1)
    shot("undone")
    folder = tmp_path / "export"
    export(driver, folder, "adult_k3.csv")
    shot("export")
    release = pd.read_csv(folder / "adult_k3.csv", keep_default_na=False, na_values=[""])
    assert release.groupby(keys, dropna=False).size().min() >= 3
    assert release[keys].isna().to_numpy().sum() > 0  # values were suppressed
    assert set(release["age"].dropna()) <= {f"({a},{a + 10}]" for a in range(10, 100, 10)}  # the preparation's bands
    same_as_release_command(folder, "adult_k3.csv", tmp_path / "again")


CONTRAST = """
const parse = (c) => (c.match(/[\\d.]+/g) || []).slice(0, 3).map(Number);
const lum = (rgb) => { const [r, g, b] = rgb.map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
const background = (e) => { while (e) { const c = getComputedStyle(e).backgroundColor;
  if (c && !c.startsWith("rgba(0, 0, 0, 0)") && c !== "transparent") return c; e = e.parentElement; } return "rgb(255, 255, 255)"; };
const worst = [];
for (const e of document.querySelectorAll("label, button, th, td, p, h1, h2, h3, span, a")) {
  if (!e.offsetParent || !e.textContent.trim()) continue;
  const a = lum(parse(getComputedStyle(e).color)), b = lum(parse(background(e)));
  const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  if (ratio < 4.5) worst.push([e.tagName, e.id, e.textContent.slice(0, 30), ratio]);
}
return worst;
"""

UNNAMED = """
const out = [];
for (const e of document.querySelectorAll("input, select, button, textarea")) {
  const named = (e.id && document.querySelector('label[for="' + e.id + '"]')) || e.closest("label")
    || e.getAttribute("aria-label") || (e.tagName === "BUTTON" && e.textContent.trim());
  if (!named) out.push(e.id || e.outerHTML.slice(0, 60));
}
return out;
"""


def test_keyboard_labels_contrast_and_1280_by_800(browser, bench):
    """Every control has a label, the workflow is reachable and usable by keyboard in a sensible order,
    text contrast is at least WCAG AA's 4.5:1, and no step overflows 1280 pixels."""
    base, token, _ = bench
    driver = browser
    start(driver, base, token)
    open_file(driver, SHARED_DATA / "casc" / "census.csv")
    Keys = pytest.importorskip("selenium.webdriver.common.keys").Keys
    ActionChains = pytest.importorskip("selenium.webdriver.common.action_chains").ActionChains
    driver.get(f"{base}/?token={token}")  # a fresh page: the focus starts at its top
    WebDriverWait(driver, 30).until(lambda d: "records" in d.find_element(By.ID, "file-name").text)
    order = []
    for _ in range(16):
        ActionChains(driver).send_keys(Keys.TAB).perform()
        active = driver.switch_to.active_element
        order.append(active.get_attribute("id") or active.get_attribute("data-step") or active.tag_name)
    steps = [o for o in order if o in ("data", "roles", "risk", "treat", "compare", "export")]
    assert steps == ["data", "roles", "risk", "treat", "compare", "export"], order  # the workflow's order
    assert order.index("export") < order.index("open-path") < order.index("open-button"), order
    # keyboard only: the Roles step opened with Enter, a role chosen with the arrow keys
    roles = driver.find_element(By.CSS_SELECTOR, 'nav .step[data-step="roles"]')
    roles.send_keys(Keys.ENTER)
    WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, "step-roles").is_displayed())
    WebDriverWait(driver, 30).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#roles-table select"))
    first = driver.find_element(By.CSS_SELECTOR, "#roles-table select")
    first.send_keys(Keys.ARROW_DOWN)
    assert Select(first).first_selected_option.get_attribute("value") == "key"
    for step in ("data", "roles", "risk", "treat", "compare", "export"):
        tab(driver, step)
        assert driver.execute_script(UNNAMED) == [], step
        assert driver.execute_script(CONTRAST) == [], step
        assert driver.execute_script("return document.documentElement.scrollWidth") <= 1280, step
