"""A measured file with a 5,000-digit number (issue 18, point 3): the CSV and JSON readers bound a
literal's length before converting it, so `fleetplan validate` exits 2 with one short line naming
the file, line and field, never 3 (Python's own 4,300-digit limit) and never a 5,000-character
message."""

from __future__ import annotations

import pytest

from tests.support.cli import cli

HEADER = "model,hardware,precision,mode,input_tokens,output_tokens,concurrency,tp,pp,ep,dp,ttft_ms,tpot_ms"
HUGE = "1" * 5000


def _row(**over) -> str:
    row = dict(zip(HEADER.split(","), ["llama-3.1-8b", "h100-sxm", "fp8", "colocated", "1024", "128", "8",
                                       "1", "1", "1", "1", "100", "10"]))
    row.update(over)
    return ",".join(row.values())


@pytest.mark.parametrize("name,text,where", [
    ("tokens.csv", f"{HEADER}\n{_row(input_tokens=HUGE)}\n", "tokens.csv:2: input_tokens"),
    ("ttft.csv", f"{HEADER}\n{_row(ttft_ms=HUGE)}\n", "ttft.csv:2: ttft_ms"),
    ("bench.json", f'{{\n"request_throughput": {HUGE}\n}}\n', "bench.json:2"),
    ("lines.json", f'{{"a": 1}}\n{{"a": {HUGE}}}\n', "lines.json:2"),
    ("deep.json", "[" * 100_000 + "]" * 100_000, "deep.json"),
])
def test_huge_literal_is_one_short_line(tmp_path, name, text, where):
    (tmp_path / name).write_text(text)
    r = cli("validate", name, "--model", "closed-form", cwd=tmp_path, timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and len(lines[0]) < 300 and where in lines[0], r.stderr
