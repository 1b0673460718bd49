"""The canary runbook section of the markdown and HTML plan reports: per pool, the benchmark
command and the latencies it must meet (solver/deploy/canary.py, with aiperf, 300 s, on
localhost:8000; `fleetplan canary RESULT.json` chooses the tool, duration and URL). The URL has
no scheme (aiperf's default form), so that the report names no web address."""

from __future__ import annotations

from solver.deploy.canary import Canary, protocol, runbook_lines
from solver.deploy.facts import plan_of
from solver.errors import InputError
from solver.report.html_markup import Raw, esc, para, table
from solver.schema.result import PlanResult

URL = "localhost:8000"  # aiperf's default --url


def canary_of(doc: PlanResult) -> Canary | str:
    """The plan's canary, or why there is none (in words)."""
    try:
        return protocol(plan_of(doc), "aiperf", 300, URL)
    except InputError as exc:
        return f"No canary runbook: {exc}"


def markdown_lines(doc: PlanResult) -> list[str]:
    c = canary_of(doc)
    body = [c] if isinstance(c, str) else runbook_lines(c)
    return ["## Canary runbook", "", *body, ""]


def html_section(doc: PlanResult) -> str:
    c = canary_of(doc)
    if isinstance(c, str):
        return para(c, "note")
    t = c.tool
    parts = [para(f"Benchmark tool: {t.program}, pinned at {t.source()}. Start one instance of each pool "
                  "(fleetplan deploy), run its command, and pass when every measured percentile is at most "
                  "'pass at most' and within the SLO bound.", "note")]
    for p in c.pools:
        f = p.facts
        parts.append(Raw(f"<h3>{esc(f.where)}: {esc(f.service.name)} {esc(f.pool.role)} on {esc(f.pool.hardware)}</h3>"))
        parts.append(para(f"rate {p.rate_qps:.6g} QPS (one instance's planned capacity), {p.input_tokens} prompt / "
                          f"{p.output_tokens} output tokens, {p.duration_s} s"))
        parts.append(Raw(f'<pre class="command"><code>{esc(p.shell)}</code></pre>'))
        rows = [[k.metric, f"{k.predicted_ms:,.2f}", "-" if k.band_pct is None else f"{k.band_pct:g}%",
                 f"{k.accept_ms:,.2f}", "-" if k.bound_ms is None else f"{k.bound_ms:,.2f}"] for k in p.checks]
        parts.append(table(["metric", "predicted ms", "band", "pass at most ms", "SLO bound ms"], rows,
                           "canary", "lrrrr"))
    return "\n".join(parts)
