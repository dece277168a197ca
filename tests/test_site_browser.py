"""The reference site in a real headless Chromium (Debian's chromium + chromedriver, installed by
`make install`): every page opens with no console error and no failed request, the leaderboard
shows the table's numbers, every chart is an SVG with marks. One screenshot per page is kept under
the pytest tmp folder (`site-screenshots/`)."""
from __future__ import annotations

import base64
import json
import shutil
import subprocess

import duckdb
import pytest

from site_builder import fmt
from site_builder.render import slug
from tests.helpers.pipeline import BENCHWH, benchwh_env, run_benchwh

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                                reason="chromium/chromedriver missing: `make install` installs them")


@pytest.fixture(scope="module")
def served_site(offline_warehouse, tmp_path_factory):
    out = tmp_path_factory.mktemp("browser-site") / "site"
    proc = run_benchwh(offline_warehouse, "site", "build", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    server = subprocess.Popen([BENCHWH, "site", "serve", "--dir", str(out), "--port", "0"],
                              env=benchwh_env(offline_warehouse), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        assert "http://127.0.0.1:" in line, server.stderr.read()
        yield out, line.split(" on ", 1)[1].split()[0]
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:  # what held it (once: a worker ignoring SIGTERM, tests/conftest.py)
            state = subprocess.run(["ps", "-ww", "-eo", "pid,ppid,stat,wchan:24,etimes,args"], capture_output=True,
                                   text=True).stdout
            server.kill()
            server.wait()
            held = [line[:240] for line in state.splitlines()
                    if "site serve" in line or "cli.dbt_server" in line or line.lstrip().startswith("PID")]
            pytest.fail("benchwh site serve outlived SIGTERM by 60 s:\n" + "\n".join(held), pytrace=False)


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--hide-scrollbars", "--window-size=1280,900", "--no-first-run", "--disable-extensions"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def network_problems(driver, base: str) -> list[str]:
    problems = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        params = msg.get("params", {})
        if msg["method"] == "Network.loadingFailed":
            problems.append(f"failed: {params.get('errorText')}")
        elif msg["method"] == "Network.responseReceived" and params["response"]["status"] >= 400:
            problems.append(f"{params['response']['status']} {params['response']['url']}")
        elif msg["method"] == "Network.requestWillBeSent":
            url = params["request"]["url"]
            if not url.startswith((base, "data:")):
                problems.append(f"request off this machine: {url}")
    return problems


CHART_MARKS_JS = """
return Array.from(document.querySelectorAll('figure.chart')).map(f => {
  const svg = f.querySelector('svg');
  return svg ? svg.querySelectorAll('.role-mark > *').length : -1;
});"""


def test_every_page_opens_cleanly_with_charts_of_marks(served_site, browser, tmp_path_factory):
    out, base = served_site
    shots = tmp_path_factory.getbasetemp() / "site-screenshots"
    shots.mkdir(exist_ok=True)
    pages = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.html"))
    assert "index.html" in pages and any(p.startswith("models/") for p in pages) and any(
        p.startswith("leaderboards/") for p in pages) and any(p.startswith("hardware/") for p in pages)
    browser.get_log("browser"), browser.get_log("performance")  # start clean
    charts_seen = 0
    for rel in pages:
        browser.get(base + rel)
        assert browser.execute_script("return document.readyState") == "complete"
        console = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
        assert console == [], (rel, console)
        assert network_problems(browser, base) == [], rel
        marks = browser.execute_script(CHART_MARKS_JS)
        assert all(n > 0 for n in marks), (rel, marks)  # -1: no SVG; 0: an SVG without marks
        charts_seen += len(marks)
        size = browser.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 16000), "scale": 1}
        shot = browser.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                                  "clip": clip})
        (shots / (rel.replace("/", "__").removesuffix(".html") + ".png")).write_bytes(base64.b64decode(shot["data"]))
    assert charts_seen > 0
    assert len(list(shots.glob("*.png"))) == len(pages)


def test_leaderboard_first_row_shows_the_tables_numbers(served_site, browser, offline_warehouse):
    from selenium.webdriver.common.by import By

    out, base = served_site
    con = duckdb.connect(str(offline_warehouse / "benchmarks.duckdb"), read_only=True)
    try:
        profile, hardware = con.execute("""
            SELECT test_profile, hardware_id FROM site.generation_leaderboard
            WHERE test_profile = (SELECT min(test_profile) FROM site.generation_leaderboard)
            ORDER BY lower(hardware_name), hardware_id LIMIT 1""").fetchall()[0]
        top = con.execute("""
            SELECT build_id, engine, gen_tps_median, gen_tps_ci_low, gen_tps_ci_high, rank_best, rank_worst, rank_of
            FROM site.generation_leaderboard WHERE test_profile = ? AND hardware_id = ?
            ORDER BY gen_tps_median DESC LIMIT 1""", [profile, hardware]).fetchall()[0]
    finally:
        con.close()
    browser.get(base + f"leaderboards/{slug(profile)}.html")
    section = browser.find_element(By.CSS_SELECTOR, "section.board")
    assert section.get_attribute("data-hardware-id") == hardware
    row = section.find_element(By.CSS_SELECTOR, "table.leaderboard tbody tr")
    assert (row.get_attribute("data-build-id"), row.get_attribute("data-engine")) == (top[0], top[1])
    assert row.find_element(By.CSS_SELECTOR, "td.median").text == f"{fmt.tps(top[2])} tok/s"
    assert row.find_element(By.CSS_SELECTOR, "td.interval").text == fmt.interval(top[3], top[4])
    assert row.find_element(By.CSS_SELECTOR, "td.rank").text == fmt.rank_range(top[5], top[6], top[7])
    assert row.find_element(By.CSS_SELECTOR, "td.rank").text.startswith("#")


RELEASE_ROWS_JS = """
return Array.from(document.querySelectorAll('table.release-speeds tbody tr'))
  .map(tr => Array.from(tr.querySelectorAll('td')).map(td => td.textContent));"""


def test_release_page_queries_the_release_in_the_browser(served_site, browser, tmp_path_factory):
    """DuckDB-WASM (vendored) reads one model's rows of the latest release over HTTP: the rows equal
    the Parquet file's, nothing is requested off this machine, and the bytes are counted (by a
    second server on the same folder: the requests come from the page's worker, which Chrome's
    page log does not show)."""
    import threading

    from site_builder.serve import make_server

    out, _ = served_site
    server = make_server(out, 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        _check_release_page(out, base, browser, tmp_path_factory, server.bytes_sent)
    finally:
        server.shutdown()
        server.server_close()


def _check_release_page(out, base, browser, tmp_path_factory, bytes_sent) -> None:
    import time

    import pyarrow.parquet as pq

    latest = json.loads((out / "latest.json").read_text())
    path = out / latest["path"] / "model_speeds_by_hardware.parquet"
    table = pq.read_table(path).to_pylist()
    counts = {}
    for row in table:
        counts[row["model_id"]] = counts.get(row["model_id"], 0) + 1
    model = max(sorted(counts), key=counts.get)
    expected = sorted((r for r in table if r["model_id"] == model),
                      key=lambda r: (-(r["gen_tps_median"] if r["gen_tps_median"] is not None else float("-inf")),
                                     r["hardware_id"], r["build_id"], r["engine"]))
    tps = lambda v: "—" if v is None else f"{v:.1f}"  # noqa: E731 - the page's own rounding (toFixed(1))

    browser.get_log("browser"), browser.get_log("performance")  # start clean
    browser.get(base + f"release.html?model={model}")
    state = None
    for _ in range(600):  # the page says when it is done; up to 60 s for a cold WASM start
        state = browser.execute_script("return document.getElementById('status').dataset.state")
        if state in ("ready", "error"):
            break
        time.sleep(0.1)
    status = browser.execute_script("return document.getElementById('status').textContent")
    assert state == "ready", status
    assert latest["version"] in status
    rows = browser.execute_script(RELEASE_ROWS_JS)
    assert rows == [[r["hardware_name"], r["quant"], r["engine"], tps(r["gen_tps_median"]), tps(r["prompt_tps_median"]),
                     "—" if r["n_runs"] is None else str(r["n_runs"])] for r in expected]
    assert len(rows) == counts[model] > 0
    assert network_problems(browser, base) == []
    received = bytes_sent["/" + latest["path"] + "model_speeds_by_hardware.parquet"]
    assert 0 < received <= path.stat().st_size  # never more than the file once
    shots = tmp_path_factory.getbasetemp() / "site-screenshots"
    shots.mkdir(exist_ok=True)
    (shots / "release.png").write_bytes(browser.get_screenshot_as_png())
    print(f"release page: {len(rows)} rows of {model}, {received} of {path.stat().st_size} bytes of the file")
