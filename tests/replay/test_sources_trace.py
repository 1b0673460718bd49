"""Trace files: the round trip, the Azure LLM trace as it is, generic CSV and JSONL with named
columns, time compression and limits, every bad line an InputError naming file, line and field,
and only regular files of bounded size."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from solver.errors import InputError
from solver.replay.loop import run
from solver.replay.requests import NOT_YET
from solver.replay.sources import load_trace, trace_source, write_trace
from solver.replay.sources.trace import read_regular

AZURE = Path(__file__).resolve().parents[2] / ".." / "shared" / "traces" / "azure-llm-2023-conv.csv"


def test_round_trip_is_exact(tmp_path):
    r = np.random.default_rng(3)
    arrival = np.concatenate([[0.0], np.cumsum(r.exponential(0.013, 199))])
    prompt = r.integers(1, 9000, 200)
    output = r.integers(1, 2000, 200)
    prefix = [None if i % 3 else f"sys-{i % 7}" for i in range(200)]
    path = tmp_path / "t.csv"
    write_trace(path, arrival, prompt, output, prefix)
    tr = load_trace(path)
    assert np.array_equal(tr.arrival_s, arrival)  # bit for bit
    assert np.array_equal(tr.prompt_tokens, prompt) and np.array_equal(tr.output_tokens, output)
    # one id per distinct prefix string, in order of first appearance; a prefix is the whole prompt
    names = {}
    want = [-1 if p is None else names.setdefault(p, len(names)) for p in prefix]
    assert tr.prefix_id.tolist() == want
    assert np.array_equal(tr.prefix_tokens, np.where(np.array(want) >= 0, prompt, 0))
    assert tr.lines.tolist() == list(range(2, 202))


def test_azure_format_loads_as_it_is(tmp_path):
    path = tmp_path / "azure.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    "2023-11-16 18:15:46.6805900,374,44\n"
                    "2023-11-16 18:15:50.9951690,396,109\n"
                    "2023-11-16 18:16:51.2224670,879,55")  # no newline at the end, as the real file
    tr = load_trace(path)
    # hand: 50.995169 - 46.680590 = 4.314579 s; 1:51.222467 - 46.680590 = 64.541877 s
    assert tr.arrival_s == pytest.approx([0.0, 4.314579, 64.541877], abs=1e-9)
    assert tr.prompt_tokens.tolist() == [374, 396, 879] and tr.output_tokens.tolist() == [44, 109, 55]
    assert tr.prefix_id.tolist() == [-1, -1, -1]


@pytest.mark.skipif(not AZURE.is_file(), reason="the shared Azure trace is not next to this checkout")
def test_the_real_azure_conversation_trace_loads():
    tr = load_trace(AZURE)
    assert len(tr) == 19_366
    assert tr.arrival_s[0] == 0.0 and np.all(np.diff(tr.arrival_s) >= 0)
    assert tr.arrival_s[-1] == pytest.approx(3501.721937, abs=1e-9)  # 19:14:08.402527 - 18:15:46.680590
    assert tr.prompt_tokens[:2].tolist() == [374, 396] and tr.output_tokens[-1] == 183


def test_jsonl_with_iso_zone_strings_and_explicit_columns(tmp_path):
    path = tmp_path / "t.jsonl"
    rows = [{"ts": "2024-01-01T00:00:01.5Z", "in": 10, "out": 3, "prefix_id": "a", "prefix_tokens": 4},
            {"ts": "2024-01-01T00:00:00+00:00", "in": 20, "out": 1},
            {"ts": "2024-01-01T01:00:00+01:00", "in": 30, "out": 2, "prefix_id": "a", "prefix_tokens": 4}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    tr = load_trace(path, columns={"arrival": "ts", "prompt": "in", "output": "out"})
    assert tr.arrival_s.tolist() == [0.0, 0.0, 1.5]  # sorted stably: 01:00+01:00 is 00:00Z
    assert tr.prompt_tokens.tolist() == [20, 30, 10]
    assert tr.prefix_id.tolist() == [-1, 0, 0] and tr.prefix_tokens.tolist() == [0, 4, 4]
    assert tr.lines.tolist() == [2, 3, 1]


def test_seconds_columns_rate_scale_and_limit(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("time_s,input_tokens,output_tokens\n10,1,1\n12,2,2\n11,3,3\n18,4,4\n")
    tr = load_trace(path, rate_scale=2.0, limit=3)
    assert tr.arrival_s.tolist() == [0.0, 0.5, 1.0]  # (t - 10) / 2, first three in time
    assert tr.prompt_tokens.tolist() == [1, 3, 2]


BAD = [
    ("arrival_s,prompt_tokens,output_tokens\n0,10,abc\n", ":2: output_tokens", "whole number"),
    ("arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,0,5\n", ":3: prompt_tokens", "1..10,000,000"),
    ("arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,10,0\n", ":3: output_tokens", "1..10,000,000"),
    ("arrival_s,prompt_tokens,output_tokens\n0,10,2.5\n", ":2: output_tokens", "whole number"),
    ("arrival_s,prompt_tokens,output_tokens\nyesterday,10,5\n", ":2: arrival_s", "ISO date-time"),
    ("arrival_s,prompt_tokens,output_tokens\ninf,10,5\n", ":2: arrival_s", "finite"),
    ("arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,10\n", ":3:", "2 values for 3 columns"),
    ("arrival_s,prompt_tokens,output_tokens\n0,,5\n", ":2: prompt_tokens", "missing value"),
    ("when,prompt_tokens,output_tokens\n0,10,5\n", ":1:", "no column for arrival"),
    ("arrival_s,prompt_tokens,output_tokens,prefix_id,prefix_tokens\n0,10,5,a,11\n", ":2: prefix_tokens",
     "longer than the prompt"),
    ("arrival_s,prompt_tokens,output_tokens\n0,99999999999,5\n", ":2: prompt_tokens", "1..10,000,000"),
    ("arrival_s,prompt_tokens,output_tokens\n", "", "no requests"),
]


@pytest.mark.parametrize("text,where,why", BAD)
def test_every_bad_line_names_file_line_and_field(tmp_path, text, where, why):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InputError) as exc:
        load_trace(path)
    msg = str(exc.value)
    assert msg.startswith(f"{path}{where}") and why in msg


@pytest.mark.parametrize("line,why", [('{"arrival_s": 0, "prompt_tokens": 1', "not a JSON object"),
                                      ("[1, 2, 3]", "expected a JSON object"),
                                      ('{"arrival_s": true, "prompt_tokens": 1, "output_tokens": 1}',
                                       "arrival_s: expected seconds")])
def test_bad_jsonl_lines(tmp_path, line, why):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"arrival_s": 0, "prompt_tokens": 5, "output_tokens": 5}\n' + line + "\n")
    with pytest.raises(InputError, match=f"bad.jsonl:2: {why}"):
        load_trace(path)


def test_only_regular_files_and_bounded_sizes(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_trace(tmp_path / "missing.csv")
    with pytest.raises(InputError, match="not a regular file"):
        load_trace(tmp_path)
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)  # opening it would block forever: refused before any open
    with pytest.raises(InputError, match="not a regular file"):
        load_trace(fifo)
    if os.path.exists("/dev/zero"):
        with pytest.raises(InputError, match="not a regular file"):
            load_trace("/dev/zero")
    big = tmp_path / "big.csv"
    big.write_text("x" * 101)
    with pytest.raises(InputError, match="over the 100-byte limit"):
        read_regular(big, limit_bytes=100)
    (tmp_path / "latin.csv").write_bytes(b"arrival_s,prompt_tokens,output_tokens\n0,\xe9,1\n")
    with pytest.raises(InputError, match="not UTF-8"):
        load_trace(tmp_path / "latin.csv")


@pytest.mark.parametrize("kw,why", [({"rate_scale": 0}, "rate scale"), ({"rate_scale": float("nan")}, "rate scale"),
                                    ({"limit": 0}, "request limit"), ({"limit": 1.5}, "request limit")])
def test_bad_scale_and_limit(tmp_path, kw, why):
    path = tmp_path / "t.csv"
    write_trace(path, [0.0], [1], [1])
    with pytest.raises(InputError, match=why):
        load_trace(path, **kw)


class Echo:
    """A server that finishes every request 0.25 s after it arrives."""

    def __init__(self, table):
        self.table, self.pending = table, []

    def submit(self, ids, t_s):
        self.pending += [(t_s + 0.25, int(i)) for i in ids]
        self.pending.sort()

    def next_event_s(self):
        return self.pending[0][0] if self.pending else NOT_YET

    def advance(self, t_s):
        out = [i for t, i in self.pending if t <= t_s]
        self.pending = [(t, i) for t, i in self.pending if t > t_s]
        self.table.finish_s[out] = t_s
        return np.array(out, dtype=np.int64)


def test_a_trace_source_replays_every_request_at_its_time(tmp_path):
    path = tmp_path / "t.csv"
    write_trace(path, [0.0, 0.1, 0.1, 3.0], [5, 6, 7, 8], [1, 2, 3, 4])
    src = trace_source(path, rate_scale=0.5)
    run(src, Echo(src.table))
    assert src.table.arrival_s.tolist() == [0.0, 0.2, 0.2, 6.0]
    assert src.table.finish_s.tolist() == [0.25, 0.45, 0.45, 6.25]
    assert src.window() == (0.0, 6.25) and src.done()


@pytest.mark.parametrize("times", [["2023-11-16 18:15:46.6805900", "2023-11-16 18:15:46.6805901",
                                    "2023-11-16 18:15:45.0000009", "2023-11-17T00:00:00"],
                                   ["3.25", "1e1", "0.1", "7"]])
def test_column_fast_path_equals_the_row_by_row_path(tmp_path, times):
    fast, slow = tmp_path / "fast.csv", tmp_path / "slow.csv"
    rows = [(t, 10 + i, 1 + i) for i, t in enumerate(times)]
    fast.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(f"{t},{p},{o}\n" for t, p, o in rows))
    # a prefix column, even empty, takes the row-by-row path
    slow.write_text("TIMESTAMP,ContextTokens,GeneratedTokens,prefix_id\n"
                    + "".join(f"{t},{p},{o},\n" for t, p, o in rows))
    a, b = load_trace(fast, rate_scale=3.0, limit=3), load_trace(slow, rate_scale=3.0, limit=3)
    for name in ("arrival_s", "prompt_tokens", "output_tokens", "prefix_id", "prefix_tokens", "lines"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
