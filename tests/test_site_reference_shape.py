"""Issue 54's acceptance: each section of each reference page (../shared/reference-pages/, kept
beside the project; skipped cleanly without it) is rendered from the Parquet exports alone, by
templates that only format, and has the reference's shape: its headings in the same order, its
tables' columns, its sentences.

Which of our pages stands for which reference page: the leaderboard of the demo's largest board,
Llama 3.2 1B (LocalScore rows: measured speeds, memory, expected speed) and the model with the
signed run of the demo (Llama 3.1 8B: cost, fits-on, recall, carbon, capabilities, builds)."""
from __future__ import annotations

import re
from pathlib import Path

import jinja2
import pytest
from bs4 import BeautifulSoup
from jinja2 import nodes

from site_builder.render import FORMAT_FILTERS, TEMPLATES, template_env
from tests.helpers.pipeline import run_benchwh, site_exports_only

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference-pages"
# filters that format or escape one value, beside fmt's; none aggregates, sorts or picks rows
ALLOWED_FILTERS = set(FORMAT_FILTERS) | {"slug", "safe", "e", "escape", "format", "join"}
ARITHMETIC = (nodes.Add, nodes.Sub, nodes.Mul, nodes.Div, nodes.FloorDiv, nodes.Mod, nodes.Pow, nodes.Neg, nodes.Pos)


def template_problems(source: str) -> list[str]:
    """What in a template goes beyond formatting: arithmetic, a filter that is not a formatter,
    a method call other than a dict's get, a loop that filters its rows."""
    problems = []
    for node in template_env().parse(source).find_all(nodes.Node):
        if isinstance(node, ARITHMETIC):
            problems.append(f"line {node.lineno}: arithmetic ({type(node).__name__})")
        elif isinstance(node, nodes.Filter) and node.name not in ALLOWED_FILTERS:
            problems.append(f"line {node.lineno}: filter {node.name}")
        elif isinstance(node, nodes.Call) and not (isinstance(node.node, nodes.Getattr) and node.node.attr == "get"):
            problems.append(f"line {node.lineno}: call")
        elif isinstance(node, nodes.For) and node.test is not None:
            problems.append(f"line {node.lineno}: a loop that chooses rows")
    return problems


def test_the_check_sees_arithmetic_choices_and_aggregates():
    assert template_problems("{{ r.a|tps }} {{ r.b ~ ' of ' ~ r.c }} {{ grid.get('x', '') }}") == []
    assert template_problems("{{ r.a / 1e9 }}")[0].endswith("arithmetic (Div)")
    assert template_problems("{{ rows|sum(attribute='n') }}") == ["line 1: filter sum"]
    assert set(template_problems("{{ rows|selectattr('passed')|list }}")) == {"line 1: filter selectattr", "line 1: filter list"}
    assert template_problems("{{ text.split(',') }}") == ["line 1: call"]
    assert template_problems("{% for r in rows if r.passed %}{{ r }}{% endfor %}") == ["line 1: a loop that chooses rows"]


def test_every_template_only_formats():
    found = {path.name: template_problems(path.read_text()) for path in sorted(TEMPLATES.glob("*.html"))}
    assert set(found) >= {"base.html", "index.html", "leaderboard.html", "model.html", "hardware.html"}
    assert {name: p for name, p in found.items() if p} == {}


def sql_texts(source: str) -> list[str]:
    """The string literals of a module that hold SQL (docstrings left out)."""
    import ast

    tree = ast.parse(source)
    docstrings = {id(body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and (body := node.body)
                  and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)}
    texts = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            texts.append(node.value)
    return [t for t in texts if re.search(r"\b(SELECT|FROM|WHERE|ORDER BY)\b", t, flags=re.I)]


def test_the_site_data_layer_only_selects():
    """site_builder/data.py reads `SELECT * ... WHERE key = ? ORDER BY columns`; no join, aggregate
    or expression of its own (the site tables hold every figure a page shows)."""
    texts = sql_texts((Path(TEMPLATES).parent / "data.py").read_text())
    assert any("SELECT * FROM site." in t for t in texts)
    sql = " ".join(texts).upper()
    for word in ("JOIN", "GROUP BY", "COUNT(", "SUM(", "MAX(", "MIN(", "DISTINCT", "UNION", "CASE ", "LOWER("):
        assert word not in sql, word
    assert sql_texts("x = 'SELECT a FROM t JOIN u USING (k)'") == ["SELECT a FROM t JOIN u USING (k)"]


# --- the reference pages --------------------------------------------------------------------------

def reference(name: str) -> str:
    path = REFERENCE / name
    if not path.is_file():
        pytest.skip(f"{path} is absent (the shared reference pages sit beside the project)")
    return path.read_text()


def reference_tables(text: str) -> list[list[str]]:
    """The header cells of each table of a reference page (| a | b | followed by |---|)."""
    lines = text.splitlines()
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line, below in zip(lines, lines[1:]) if line.startswith("| ") and below.startswith("|---")]


def our_tables(page: BeautifulSoup) -> list[list[str]]:
    return [[th.get_text(" ", strip=True) for th in table.select("thead th")] for table in page.select("table")]


def has_table(ours: list[list[str]], columns: list[str]) -> bool:
    """A table of ours starts with the reference's columns, in order; a run of context sizes
    (4K, 8K, ...) in the reference matches any run of sizes."""
    size = re.compile(r"^\d+(\.\d+)?K$")

    def shape(cols):
        out = []
        for c in cols:
            c = "<sizes>" if size.match(c) else c.lower()
            if not (out and out[-1] == c == "<sizes>"):
                out.append(c)
        return out

    want = shape(columns)
    return any(shape(t)[:len(want)] == want for t in ours)


def headings_in_order(page: BeautifulSoup, headings: list[str]) -> list[str]:
    ours = [h.get_text(" ", strip=True) for h in page.select("h1, h2, h3")]
    positions = [next((i for i, h in enumerate(ours) if h.startswith(want)), None) for want in headings]
    missing = [h for h, p in zip(headings, positions) if p is None]
    assert not missing, (missing, ours)
    return positions


@pytest.fixture(scope="module")
def exports_site(offline_warehouse, tmp_path_factory):
    """The site built from a folder holding the site tables' Parquet files and the manifest only."""
    root = tmp_path_factory.mktemp("from-exports")
    exports = site_exports_only(offline_warehouse, root / "exports")
    proc = run_benchwh(root / "home", "site", "build", "--from", str(exports), "--out", str(root / "site"))
    assert proc.returncode == 0, proc.stderr
    assert {p.suffix for p in exports.iterdir()} == {".parquet", ".json"}
    return root / "site"


def _page(site: Path, rel: str) -> BeautifulSoup:
    return BeautifulSoup((site / rel).read_text(), "html.parser")


def check_sentences(ref_text: str, page: BeautifulSoup, patterns: list[str]) -> None:
    """Each sentence pattern is on the reference page and on ours (GB on theirs, GiB on ours)."""
    ours = page.get_text(" ", strip=True)
    for pattern in patterns:
        assert re.search(pattern, ref_text), f"not on the reference page: {pattern}"
        assert re.search(pattern, ours), f"not on our page: {pattern}"


def largest_board(site: Path) -> tuple[str, BeautifulSoup]:
    boards = []
    for path in sorted((site / "leaderboards").glob("*.html")):
        page = _page(site, f"leaderboards/{path.name}")
        for board in page.select("section.board"):
            boards.append((len(board.select("table.leaderboard tbody tr")), path.name, page))
    n, name, page = max(boards, key=lambda b: (b[0], b[1]))
    return name, page


def test_the_leaderboard_page_has_the_reference_shape(exports_site):
    ref = reference("leaderboard-generation-1k.txt")
    _, page = largest_board(exports_site)
    for columns in reference_tables(ref):
        assert has_table(our_tables(page), columns), columns
    positions = headings_in_order(page, ["Measured models", "Model cards"])
    assert positions == sorted(positions)
    check_sentences(ref, page, [
        r"How fast the model writes its answer: tokens per second over [\d,]+ generated tokens, after a prompt of "
        r"about [\d,]+ tokens\. Greedy sampling, median of",
        r"Turn time is from sending the message to the last of [\d,]+ tokens, as the client sees it",
        r"#\d+–\d+ of \d+",  # a rank range
    ])


def test_the_localscore_model_page_has_the_reference_shape(exports_site):
    ref = reference("model-page-llama-3.2-1b.txt")
    page = _page(exports_site, "models/llama-3.2-1b-instruct.html")
    for columns in reference_tables(ref):
        assert has_table(our_tables(page), columns), columns
    positions = headings_in_order(page, ["Measured speeds", "Memory needed per quantization",
                                         "Expected speed on popular hardware"])
    assert positions == sorted(positions)
    check_sentences(ref, page, [
        r"At Q4_K_M, Llama 3.2 1B Instruct needs about [\d.]+ Gi?B",
        r"[\d.]+B parameters",
        r"LocalScore avg",
        r"\d+ GB cards",
    ])
    links = [a["href"] for a in page.select("table.measured-speeds a[href^='https://www.localscore.ai/result/']")]
    assert links and all(re.fullmatch(r"https://www\.localscore\.ai/result/\d+", h) for h in links)


def test_the_signed_runs_model_page_has_the_reference_shape(exports_site):
    ref = reference("model-page-llama-3.2-3b.txt")
    page = _page(exports_site, "models/llama-3.1-8b-instruct.html")
    for columns in reference_tables(ref):
        assert has_table(our_tables(page), columns), columns
    positions = headings_in_order(page, ["Speed against price", "What it fits on", "How far back it remembers",
                                         "Carbon per million tokens", "Measured by", "Every build",
                                         "Fine-tunes, merges and abliterations"])
    assert positions == sorted(positions)
    check_sentences(ref, page, [
        r"[\d.,]+ tokens a second on .+\. About \$[\d.]+ per million tokens here, against OpenRouter's \$[\d.]+: "
        r"(the API is|running it here is) [\d.]+× cheaper\.",
        r"\d+ builds? of .+, \d+ signed runs? on real machines",
        r"trained \d+K · proved \d+K context, by \S+ \S+",
        r"[\d.]+ tok/s peak, by ",
        r"The smallest build needs about [\d.]+ Gi?B; \d+ of \d+ kinds of machine on the network can hold it\.",
        r"Filled: the needle came back at that prompt size · outlined: asked and lost · .*blank: not asked · "
        r"trained for \d+K\. \d+ walks? ended because the model forgot, \d+ because the machine could not hold the prompt",
        r"Lowest build on each machine · \d+ of \d+ read off a power sensor, the rest modelled from the parts · "
        r"fewer grams is better",
        r"Carbon is location-based: signed energy × the yearly average of the grid where the machine signed its place",
        r"The people whose machines signed these numbers",
        r"proved by at least one build: \w",
    ])
    # the charts the reference page describes: dots labelled, bars with ticks, carbon bars
    assert len(page.select("figure.chart svg")) >= 4
    recall = page.select_one("table.recall")
    sizes = [th.get_text(strip=True) for th in recall.select("thead th")][1:-1]
    assert sizes[:3] == ["4K", "8K", "16K"] and recall.select_one("th.trained")
    states = {c for td in recall.select("td.cell") for c in td["class"]} - {"num", "cell"}
    assert {"recalled", "lost", "not_asked"} <= states


def test_machine_pages_show_their_specs(exports_site, offline_warehouse):
    import duckdb

    con = duckdb.connect(str(offline_warehouse / "benchmarks.duckdb"), read_only=True)
    try:
        rows = con.execute("SELECT hardware_id, machine_class, memory_bandwidth_gbps FROM site.hardware").fetchall()
    finally:
        con.close()
    assert rows
    for hardware_id, machine_class, bandwidth in rows:
        page = _page(exports_site, f"hardware/{re.sub(r'[^A-Za-z0-9._-]+', '-', hardware_id)}.html")
        assert page.select_one("table.specs td.machine-class").get_text() == machine_class
        specs = page.select_one("table.specs").get_text(" ", strip=True)
        assert bandwidth is None or f"{bandwidth:,.0f} GB/s" in specs


def test_a_page_that_computes_is_caught(tmp_path):
    """The template check reads the real templates: a copy with one sum in it fails."""
    model = (TEMPLATES / "model.html").read_text()
    broken = model.replace("{{ f.n_kinds_holding }}", "{{ fits|sum(attribute='builds_held') }}", 1)
    assert broken != model
    assert template_problems(broken) == [f"line {broken[:broken.index('|sum')].count(chr(10)) + 1}: filter sum"]
    with pytest.raises(jinja2.TemplateSyntaxError):
        template_env().parse("{% for %}")
