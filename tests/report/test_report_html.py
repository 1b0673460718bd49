"""`fleetplan plan --format html` (and the markdown report) end to end through the real command:
the report is parsed with the standard library's html.parser and checked against the JSON result
of the same problem (sections, pools, cost breakdown, latency checks, frontier), every embedded
image is decoded and opened as a PNG, nothing is fetched from outside, names from the problem
file are escaped, and without matplotlib the command fails cleanly. A headless browser renders
the page where one is installed (skipped otherwise)."""

from __future__ import annotations

import base64
import io
import json
import shutil
import struct
import subprocess
import sys
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from tests.support.cli import ROOT, cli, env_lacking
from tests.support.questions_problem import small_problem

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
FEASIBLE_SECTIONS = ["decision", "pools", "latency", "cost", "frontier", "replay", "alternatives",
                     "canary", "assumptions", "validity", "solver"]
NO_RECORD_SECTIONS = [s for s in FEASIBLE_SECTIONS if s != "replay"]  # the replay is part of the record
NASTY = '<script>alert("x")</script> $\\frac{1}$ & co'  # HTML, and matplotlib math mode


class Page(HTMLParser):
    """The parts of the report the tests look at."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.sections: dict[str, str] = {}  # id -> its text
        self.tables: dict[str, list[list[str]]] = defaultdict(list)  # class -> body rows
        self.headers: dict[str, list[str]] = {}
        self.items: dict[str, list[str]] = defaultdict(list)  # section id -> its <li> texts
        self.decision = ""
        self._li: list[str] | None = None
        self._section: str | None = None
        self._table: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._in_head = False
        self._in_decision = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "section":
            self._section = a["id"]
            self.sections[self._section] = ""
        elif tag == "table":
            self._table = a.get("class") or ""
        elif tag == "thead":
            self._in_head = True
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "p" and a.get("class") == "decision":
            self._in_decision = True
        elif tag == "li":
            self._li = []

    def handle_endtag(self, tag):
        if tag == "section":
            self._section = None
        elif tag in ("td", "th") and self._row is not None:
            self._row.append("".join(self._cell or []).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self._in_head:
                self.headers[self._table] = self._row
            else:
                self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "thead":
            self._in_head = False
        elif tag == "table":
            self._table = None
        elif tag == "p":
            self._in_decision = False
        elif tag == "li" and self._li is not None:
            self.items[self._section or ""].append("".join(self._li))
            self._li = None

    def handle_data(self, data):
        if self._section is not None:
            self.sections[self._section] += data
        if self._cell is not None:
            self._cell.append(data)
        if self._in_decision:
            self.decision += data
        if self._li is not None:
            self._li.append(data)

    def images(self) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == "img"]

    def column(self, table: str, header: str) -> list[str]:
        i = self.headers[table].index(header)
        return [r[i] for r in self.tables[table]]


def _run_report(problem: Path | str, out_dir: Path, *extra: str):
    """The html report and the JSON result of one problem (two commands, run side by side)."""
    html_path, json_path = out_dir / "report.html", out_dir / "result.json"
    procs = [subprocess.Popen([sys.executable, "-m", "solver", "plan", str(problem), "--format", fmt,
                               "--out", str(path), "--no-timings", *extra], cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for fmt, path in (("html", html_path), ("json", json_path))]
    (out, err), (_, js_err) = (p.communicate(timeout=300) for p in procs)
    r = subprocess.CompletedProcess(procs[0].args, procs[0].returncode, out, err)
    assert procs[1].returncode == r.returncode, js_err
    doc = json.loads(json_path.read_text())
    text = html_path.read_text(encoding="utf-8")
    return r, text, Page(text), doc


@pytest.fixture(scope="module")
def min_cost(tmp_path_factory):
    return _run_report(ROOT / "problems" / "llama3-70b-online.yaml", tmp_path_factory.mktemp("mc"))


@pytest.fixture(scope="module")
def max_throughput(tmp_path_factory):
    return _run_report(ROOT / "problems" / "budget-max-throughput.yaml", tmp_path_factory.mktemp("mt"))


@pytest.fixture(scope="module")
def infeasible(tmp_path_factory):
    d = tmp_path_factory.mktemp("inf")
    src = (ROOT / "problems" / "llama3-70b-online.yaml").read_text()
    p = d / "too-small-budget.yaml"
    p.write_text(src.replace("objective: min_cost\n", "objective: min_cost\nbudget_per_hour: 100\n"))
    return _run_report(p, d)


@pytest.fixture(scope="module")
def nasty_problem(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("nasty") / "nasty.yaml"
    text = small_problem(100).replace("name: small-two-types", "name: '<b>bold</b> plan'")
    p.write_text(text.replace("  - name: chat", "  - name: '" + NASTY.replace("'", "''") + "'"))
    return p


@pytest.fixture(scope="module")
def nasty(nasty_problem, tmp_path_factory):
    return _run_report(nasty_problem, tmp_path_factory.mktemp("nasty-out"))


@pytest.fixture(scope="module", params=["min_cost", "max_throughput"])
def feasible(request):
    return request.getfixturevalue(request.param)


# ---- structure ---------------------------------------------------------------------------------


def test_every_section_is_there_in_order(feasible):
    r, text, page, doc = feasible
    assert r.returncode == 0 and r.stdout == "" and r.stderr == "", r.stderr
    assert list(page.sections) == FEASIBLE_SECTIONS
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    # the navigation links every section, inside the page
    hrefs = [a["href"] for t, a in page.tags if t == "a"]
    assert hrefs == [f"#{s}" for s in FEASIBLE_SECTIONS]


def test_canary_runbook_has_each_pools_command_and_bounds(feasible):
    """One aiperf command per pool at one instance's planned capacity, and per bounded metric of
    the pool's role its prediction, band and the most a measurement may be (the prediction x (1 +
    the decision record's band))."""
    _, _, page, doc = feasible
    pools = [(s, p) for s in doc["services"] for p in s["pools"]]
    sec = page.sections["canary"]
    assert sec.count("aiperf profile --model") == len(pools)
    for _, p in pools:
        assert f"rate {p['capacity_qps_per_instance']:.6g} QPS" in sec
    bands = {(b["service"], b["role"], b["hardware"]): b for b in doc["decision"]["uncertainty"]["pools"]}
    expected = []
    for s, p in pools:
        b = bands[(s["name"], p["role"], p["hardware"])]
        metrics = {"prefill": ["ttft"], "decode": ["tpot"], "colocated": ["ttft", "tpot"]}[p["role"]]
        for m in metrics:
            for q, key in (("p50", f"{m}_ms"), ("p99", f"{m}_p99_ms")):
                v = p["predicted"][key]
                if v is not None:
                    band = b[f"band_{m}_pct"]
                    expected.append([f"{m}_{q}_ms", f"{v:,.2f}", f"{band:g}%", f"{round(v * (1 + band / 100), 4):,.2f}"])
    assert [r[:4] for r in page.tables["canary"]] == expected


def test_decision_paragraph_states_the_plan(feasible):
    _, _, page, doc = feasible
    d = page.decision
    mix = ", ".join(f"{n} x {k}" for k, n in doc["devices_by_type"].items())
    assert d.startswith(f"Deploy {doc['total_devices']} devices ({mix}) for ${doc['cost_per_hour']:,.2f}/h")
    for s in doc["services"]:
        assert f"Service '{s['name']}' ({s['model']}" in d and f"runs {s['runtime']}" in d
    fb = doc["decision"]["fallback"]
    assert "Fallback: " in d and f"${fb['cost_per_hour']:,.2f}/h ({fb['delta_cost_pct']:+.1f}%)" in d
    if doc["objective"]["kind"] == "max_throughput":
        assert f"{doc['throughput_scale']:g} x the demand mix" in d


def test_main_risk_is_a_bound_met_only_at_the_central_estimate_else_the_tightest(min_cost):
    """llama3-70b-online: with the bands of Llama-3.1-70B's own validation rows (h100-sxm: 45 rows,
    TTFT 5.12%, TPOT 6.49%; h200-sxm: 60 rows, TTFT 12.67%, TPOT 7.67%) the three prefill pools'
    TTFT p99, 1428.5714 ms predicted, is 1428.5714 x 1.0512 = 1501.71 ms at the band's upper
    edge, over its 1,500 ms bound: the main risk names it (and the two like it). With every
    check moved inside its bound the main risk is the tightest bound at the edge instead."""
    from solver.report.decision_views import main_risk
    from solver.schema.result import PlanResult

    _, _, page, doc = min_cost
    bands = doc["decision"]["uncertainty"]["pools"]
    assert [(b["band_ttft_pct"], b["band_tpot_pct"]) for b in bands] == [(5.12, 6.49)] * 4 + [(12.67, 7.67)]
    central = [(b["role"], c["metric"], c["upper_edge_ms"]) for b in bands for c in b["checks"]
               if not c["holds_at_upper_edge"]]
    assert central == [("prefill", "ttft_p99_ms", 1501.7143)] * 3
    assert len(doc["decision"]["uncertainty"]["central_only"]) == 3
    assert "Main risk: TTFT p99 of chat prefill" in page.decision
    assert ("meets its 1,500 ms bound only at the central estimate (1,429 ms predicted, 1,502 ms at "
            "the +5.12% error band's upper edge); 2 more bounds likewise") in page.decision
    held = json.loads(json.dumps(doc))
    for b in held["decision"]["uncertainty"]["pools"]:
        for c in b["checks"]:
            c["upper_edge_ms"] = min(c["upper_edge_ms"], 0.999 * c["bound_ms"])
            c["holds_at_upper_edge"] = True
    held["decision"]["uncertainty"]["central_only"] = []
    risk = main_risk(PlanResult.model_validate(held))
    assert risk.startswith("every SLO bound holds at its error band's upper edge; the tightest is TTFT p99 "
                           "of chat prefill"), risk
    assert "(1,498 of 1,500 ms at the edge)" in risk


def test_pools_table_rows_are_the_results_pools(feasible):
    _, _, page, doc = feasible
    rows = page.tables["pools"]
    want = [(s["name"], p["role"], p["hardware"], f"tp{p['tp']} pp{p['pp']}"
             + (f" ep{p['ep']} dp{p['dp']}" if p["ep"] > 1 or p["dp"] > 1 else ""),
             str(p["batch"]), str(p["instances"]), str(p["devices"]), f"{p['capacity_qps']:,.1f}",
             f"{p['cost_per_hour']:,.2f}", p["precision"])
            for s in doc["services"] for p in s["pools"]]
    h = page.headers["pools"]
    cols = [h.index(c) for c in ("service", "role", "hardware", "parallel", "batch", "instances",
                                 "devices", "capacity QPS", "$/hour", "precision")]
    assert [tuple(r[i] for i in cols) for r in rows] == want
    assert sum(int(x) for x in page.column("pools", "devices")) == doc["total_devices"]


def test_cost_breakdown_adds_up(feasible):
    _, _, page, doc = feasible
    by_type: dict[str, float] = defaultdict(float)
    for s in doc["services"]:
        for p in s["pools"]:
            by_type[p["hardware"]] += p["cost_per_hour"]
    types = page.tables["cost-types"]
    assert [r[0] for r in types] == list(doc["devices_by_type"])
    assert [r[1] for r in types] == [str(n) for n in doc["devices_by_type"].values()]
    assert [r[3] for r in types] == [f"{by_type[t]:,.2f}" for t in doc["devices_by_type"]]
    total = page.tables["cost-services"][-1]
    assert total[0] == "total" and total[-1] == f"{doc['cost_per_hour']:,.2f}"
    assert total[-2] == str(doc["total_devices"])
    shares = [float(r[4].rstrip("%")) for r in types]
    assert abs(sum(shares) - 100.0) < 0.2


def test_latency_table_is_the_records_checks(feasible):
    _, _, page, doc = feasible
    checks = [c for b in doc["decision"]["uncertainty"]["pools"] for c in b["checks"]]
    rows = page.tables["latency"]
    assert len(rows) == len(checks)
    assert [r[2] for r in rows] == [f"{c['predicted_ms']:,.0f}" for c in checks]
    assert [r[4] for r in rows] == [f"{c['upper_edge_ms']:,.0f}" for c in checks]
    verdicts = ["holds at the edge" if c["holds_at_upper_edge"] else "central only" for c in checks]
    assert [r[-1] for r in rows] == verdicts


def test_frontier_section_matches_the_plan(feasible):
    _, _, page, doc = feasible
    rows = page.tables["frontier"]
    assert len(rows) == 5  # REPORT_FRONTIER_POINTS
    costs = [float(r[2].replace(",", "")) for r in rows]
    assert costs == sorted(costs) and costs[0] > 0
    if doc["objective"]["kind"] == "min_cost":
        # nothing bounds this problem's traffic: the sweep ends at its demand, the plan itself
        assert rows[-1][0] == "1" and costs[-1] == doc["cost_per_hour"]
    else:
        # the budget bounds it: the top level is the plan's own scale, at most the budget
        assert float(rows[-1][0]) == doc["throughput_scale"]
        assert costs[-1] <= 400.0
        assert "allow at most" in page.sections["frontier"]


def test_runners_up_fallback_assumptions_validity(feasible):
    _, _, page, doc = feasible
    rec = doc["decision"]
    assert page.column("runners-up", "excluded") == [a["excluded"] for a in rec["runners_up"]]
    fb = rec["fallback"]
    assert list(zip(*(page.column("fallback", c) for c in ("service", "role", "hardware", "instances",
                                                           "devices")))) == [
        (s, p["role"], p["hardware"], str(p["instances"]), str(p["devices"]))
        for s, p in zip(fb["services"], fb["pools"])]
    prof = doc["assumptions"]["profiles"]
    assert len(page.tables["profiles"]) == len(prof)
    assert page.column("profiles", "stale") == ["stale" if p["stale"] else "no" for p in prof]
    assert f"{doc['assumptions']['calibration']['ttft_median_abs_pct']:g}%" in page.sections["assumptions"]
    v = rec["validity"]
    assert page.column("validity", "quantity") == (
        ([v["demand"]["quantity"]] if v["demand"] else []) + [i["quantity"] for i in v["prices"]])
    assert page.column("remeasure", "by") == [m["by"] for m in v["remeasure"]]


# ---- images and self-containment ---------------------------------------------------------------


def test_every_image_is_an_embedded_png_with_ink(feasible):
    from PIL import Image

    _, _, page, _ = feasible
    imgs = page.images()
    assert [i["alt"] for i in imgs] == ["latency vs SLO per pool", "cost by service and device type",
                                        "cost vs served traffic"]
    for img in imgs:
        prefix = "data:image/png;base64,"
        assert img["src"].startswith(prefix)
        data = base64.b64decode(img["src"][len(prefix):], validate=True)
        assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
        width, height = struct.unpack(">II", data[16:24])
        assert 600 <= width <= 1200 and 150 <= height <= 1500
        with Image.open(io.BytesIO(data)) as im:
            assert im.format == "PNG" and im.size == (width, height)
            rgb = np.asarray(im.convert("RGB"))
        ink = (rgb.min(axis=2) < 200).mean()
        assert 0.01 < ink < 0.6, (img["alt"], ink)  # neither blank nor a filled block
        colours = np.unique(rgb.reshape(-1, 3), axis=0)
        assert len(colours) > 10  # bars, text, grid: more than a flat fill


def test_nothing_is_fetched_from_outside(feasible):
    _, text, page, _ = feasible
    for tag, attrs in page.tags:
        assert tag not in ("script", "link", "iframe", "object", "embed"), tag
        for key in ("src", "href", "data", "action"):
            v = attrs.get(key) or ""
            assert not v.lower().startswith(("http:", "https:", "//", "file:")), (tag, v)
    assert "url(" not in text and "@import" not in text
    assert "http://" not in text and "https://" not in text


# ---- infeasible --------------------------------------------------------------------------------


def test_infeasible_plan_gets_a_report_saying_why(infeasible):
    r, _, page, doc = infeasible
    assert r.returncode == 1 and r.stderr == "", r.stderr
    assert doc["status"] == "infeasible"
    assert list(page.sections) == ["decision", "why", "assumptions", "validity", "solver"]
    assert page.decision.startswith(f"No plan exists for {doc['problem']}: {doc['infeasible_because'][0]}")
    why = page.items["why"]
    assert why == doc["infeasible_because"] and "budget of $100.00/hour" in why
    assert page.images() == [] and "pools" not in page.tables


# ---- escaping, determinism, markdown -----------------------------------------------------------


def test_names_from_the_problem_file_are_escaped(nasty, nasty_problem, tmp_path):
    r, text, page, _ = nasty
    assert r.returncode == 0, r.stderr  # the '$' in the name did not start matplotlib's math mode
    assert "<script" not in text.lower() and "<b>" not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; $\\frac{1}$ &amp; co" in text
    assert "&lt;b&gt;bold&lt;/b&gt; plan" in text
    assert set(page.column("pools", "service")) == {NASTY}  # unescaped by the parser: the name
    assert f"Service '{NASTY}'" in page.decision
    assert len(page.images()) == 3
    again = tmp_path / "again.html"
    r2 = cli("plan", str(nasty_problem), "--format", "html", "--out", str(again), "--no-timings")
    assert r2.returncode == 0 and again.read_bytes() == text.encode("utf-8")  # byte-identical


def test_html_without_a_decision_record(nasty_problem, tmp_path):
    """plan --no-record: no band, no runners-up, fallback or intervals; the report says so."""
    out = tmp_path / "r.html"
    r = cli("plan", str(nasty_problem), "--format", "html", "--out", str(out), "--no-record")
    assert r.returncode == 0, r.stderr
    page = Page(out.read_text())
    assert list(page.sections) == NO_RECORD_SECTIONS
    assert "Not computed: the plan carries no decision record" in page.sections["alternatives"]
    assert "Not computed: the plan carries no decision record" in page.sections["validity"]
    assert "the prediction error was not assessed" in page.decision
    rows = page.tables["latency"]
    assert rows and all(r[3] == "-" and r[4] == "-" and r[-1] == "holds (no band)" for r in rows)
    assert len(page.images()) == 3


def test_markdown_carries_the_same_sections(nasty, nasty_problem):
    r = cli("plan", str(nasty_problem), "--format", "markdown", "--no-timings")
    assert r.returncode == 0, r.stderr
    md = r.stdout
    heads = [line for line in md.splitlines() if line.startswith("## ")]
    assert heads == ["## Decision", "## Pools", "## Cost breakdown", "## Canary runbook", "## Assumptions",
                     "## Uncertainty", "## Replay", "## Runners-up", "## Fallback", "## Valid while",
                     "## Record", "## Solver"]
    assert "![" not in md and "data:image" not in md  # plain text, no images
    assert "\\<script>" in md
    assert all(md[i - 1] == "\\" for i, c in enumerate(md) if c == "<")  # no '<' can open a tag
    decision = md.split("## Decision\n\n")[1].split("\n")[0]
    assert decision.startswith("Deploy ") and "Main risk: " in decision and "Fallback: " in decision
    js = nasty[3]
    total = [line for line in md.splitlines() if line.startswith("| **total** |")]
    assert total == ["| **total** | " + " | ".join(
        f"{sum(p['cost_per_hour'] for s in js['services'] for p in s['pools'] if p['hardware'] == t):,.2f}"
        for t in js["devices_by_type"]) + f" | {js['total_devices']} | {js['cost_per_hour']:,.2f} |"]


def test_html_without_matplotlib_is_a_clear_error(tmp_path):
    """A package named matplotlib that cannot be imported stands in for a missing install."""
    env = env_lacking(tmp_path, "matplotlib")
    out = tmp_path / "r.html"
    r = cli("plan", str(ROOT / "problems" / "llama3-70b-online.yaml"), "--format", "html",
            "--out", str(out), env=env)
    assert r.returncode == 2
    assert r.stderr.strip() == ("error: --format html needs matplotlib, which is not installed "
                                "(pip install 'fleetplan[plot]')")
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert not out.exists()


# ---- a real browser, where one is installed ----------------------------------------------------


def _browser() -> list[str] | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return [path, "--headless", "--disable-gpu", "--no-sandbox", "--window-size=1200,1600"]
    path = shutil.which("firefox")
    if path:
        return [path, "--headless", "--window-size=1200,1600"]
    return None


def test_headless_browser_screenshot(min_cost, tmp_path):
    from PIL import Image

    _, text, _, _ = min_cost
    page = tmp_path / "report.html"
    page.write_text(text)
    shot = tmp_path / "shot.png"
    cmd = _browser()
    if cmd is not None:
        flag = f"--screenshot={shot}" if "firefox" not in cmd[0] else "--screenshot"
        args = cmd + ([flag, page.as_uri()] if "firefox" not in cmd[0] else [flag, str(shot), page.as_uri()])
        subprocess.run(args, capture_output=True, timeout=120, cwd=tmp_path)
    else:
        try:
            from playwright.sync_api import Error, sync_playwright
        except ImportError:
            pytest.skip("no headless browser (chromium, firefox or playwright) is installed")
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch()
                tab = browser.new_page(viewport={"width": 1200, "height": 1600})
                tab.goto(page.as_uri())
                tab.screenshot(path=str(shot))
                browser.close()
        except Error as exc:
            pytest.skip(f"playwright has no browser to launch: {exc}")
    assert shot.exists() and shot.read_bytes()[:8] == PNG_SIGNATURE
    with Image.open(shot) as im:
        rgb = np.asarray(im.convert("RGB"))
    h, w = rgb.shape[:2]
    assert w >= 800 and h >= 600
    ink = (rgb.min(axis=2) < 200).mean()
    assert 0.005 < ink < 0.6, ink  # the page rendered text and figures, not a blank page
