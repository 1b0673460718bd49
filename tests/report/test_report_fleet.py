"""The reports of a fleet over sites with failure domains (issue 18): every pool's site, what each
service must survive and the capacity left in the worst case, the fallback and runners-up in one
line each with their service, full parallelism and devices, what the power figure counts; and
in a real browser (headless chromium, skipped without one) a 900 px window scrolls no table
past the page's edge."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from tests.report.test_report_html import _run_report
from tests.support.cli import ROOT, cli

SURVIVE = ROOT / "problems" / "survive-failure.yaml"


@pytest.fixture(scope="module")
def survive(tmp_path_factory):
    r, text, page, doc = _run_report(SURVIVE, tmp_path_factory.mktemp("survive"))
    assert r.returncode == 0, r.stderr
    return text, page, doc


@pytest.fixture(scope="module")
def survive_md(tmp_path_factory):
    out = tmp_path_factory.mktemp("survive-md") / "plan.md"
    r = cli("plan", str(SURVIVE), "--format", "markdown", "--out", str(out), "--no-timings", timeout=600)
    assert r.returncode == 0, r.stderr
    return out.read_text()


def _pools(doc):
    return [(s["name"], p) for s in doc["services"] for p in s["pools"]]


def test_html_pools_carry_their_site_and_the_sites_table(survive):
    _, page, doc = survive
    assert page.headers["pools"][:3] == ["service", "site", "role"]
    assert page.column("pools", "site") == [p["site"] for _, p in _pools(doc)]
    assert [r[0] for r in page.tables["sites"]] == [x["name"] for x in doc["sites"]]
    assert page.column("sites", "devices") == [str(x["devices"]) for x in doc["sites"]]


def _survive_words(doc) -> list[str]:
    (s,) = doc["services"]
    v = s["survive"]
    return [f"demand {s['demand_qps']:g} QPS", f"losing {v['lose_instances']} instance",
            f"{v['worst_instances_loss_qps']:,.1f} QPS ({v['worst_instances_loss_hardware']})",
            "losing any one site", f"{v['worst_site_loss_qps']:,.1f} QPS (without {v['worst_site_loss_site']})"]


def test_survive_requirement_and_worst_case_in_html_and_markdown(survive, survive_md):
    _, page, doc = survive
    (line,) = [x for x in page.items["pools"] if "must survive" in x]
    for words in _survive_words(doc):
        assert words in line, (words, line)
    (md,) = [x for x in survive_md.splitlines() if "must survive" in x]
    for words in _survive_words(doc):
        assert words in md, (words, md)


def _phrase(service: str, p: dict) -> str:
    return (f"{service} {p['role']}: {p['instances']} x {p['hardware']} tp{p['tp']} pp{p['pp']} "
            f"ep{p['ep']} dp{p['dp']} batch {p['batch']}, {p['devices']} devices at site {p['site']}")


def test_fallback_and_runners_up_name_service_parallelism_and_devices(survive, survive_md):
    _, page, doc = survive
    f = doc["decision"]["fallback"]
    assert f["services"] == ["chat"] * len(f["pools"])
    assert page.column("fallback", "service") == f["services"]
    assert page.column("fallback", "devices") == [str(p["devices"]) for p in f["pools"]]
    assert page.column("fallback", "parallel") == [f"tp{p['tp']} pp{p['pp']} ep{p['ep']} dp{p['dp']}"
                                                   for p in f["pools"]]
    (md,) = [x for x in survive_md.splitlines() if x.startswith("- h100-sxm only")]
    for p in f["pools"]:  # 12 instances of tp1 pp4 read as 48 devices, not 12
        assert _phrase("chat", p) in md, (p, md)
    for a in doc["decision"]["runners_up"]:
        if a["status"] != "infeasible":
            assert re.search(r"chat (prefill|decode|colocated): \d+ x \S+ tp\d+ pp\d+ ep\d+ dp\d+ batch \d+, "
                             r"\d+ devices? at site us-(east|west)", a["summary"]), a["summary"]


def test_power_says_it_is_device_tdp(survive, survive_md):
    text, page, _ = survive
    assert "power (device TDP only)" in text and "device TDP only" in page.decision
    assert "device TDP kW" in page.headers["cost-types"]
    assert "(device TDP only)" in survive_md.splitlines()[2]  # the headline
    assert "hosts, network and cooling are not counted" in survive_md


# ---- a real browser: a narrow window -------------------------------------------------------------

PROBE = ("<script>window.addEventListener('load', function () {"
         "var d = document.documentElement;"
         "document.body.setAttribute('data-scroll-width', String(Math.max(d.scrollWidth, document.body.scrollWidth)));"
         "document.body.setAttribute('data-client-width', String(d.clientWidth)); });</script></body>")


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def test_wide_tables_scroll_inside_the_page_at_900px(survive, tmp_path):
    """The page is no wider than a 900 px window: each table scrolls sideways in its container."""
    text, page, _ = survive
    assert text.count('<div class="scroll"><table') == text.count("<table")
    browser = _chromium()
    if browser is None:
        pytest.skip("no headless chromium is installed")
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("</body>", PROBE), encoding="utf-8")
    r = subprocess.run([browser, "--headless", "--disable-gpu", "--no-sandbox", "--window-size=900,1200",
                        "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120)
    m = re.search(r'data-scroll-width="(\d+)" data-client-width="(\d+)"', r.stdout)
    assert m, (r.returncode, r.stderr[-2000:])
    scroll, client = int(m.group(1)), int(m.group(2))
    assert 800 <= client <= 900 and scroll <= client, (scroll, client)
