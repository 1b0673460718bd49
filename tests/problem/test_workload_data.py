"""A workload from data (solver/problem/workload_data.py): the summary of a trace by hand on a
tiny trace, the shipped Azure conversation trace and ServeGen length file against numpy over
the raw CSV, bad files as InputErrors naming file, line and field, and problems that name a
trace or a length file."""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path

import numpy as np
import pytest

from solver.errors import InputError
from solver.problem.load import load_problem, parse_problem
from solver.problem.workload_data import summarize
from tests.support.cli import ROOT

TRACES = ROOT / "traces"
AZURE_CONV = TRACES / "azure-llm-2023-conv.csv"
SERVEGEN_LENGTHS = TRACES / "servegen-m-large-lengths.csv"

# arrivals (s), prompt and output tokens; one row out of time order (the reader sorts it)
TINY = [(0, 100, 10), (1, 200, 10), (4, 400, 10), (3, 300, 10), (6, 500, 20), (6.5, 600, 20), (9, 700, 30),
        (12, 800, 40)]


def _write(path: Path, rows, header=("arrival_s", "prompt_tokens", "output_tokens")) -> Path:
    path.write_text(",".join(header) + "\n" + "".join(",".join(map(str, r)) + "\n" for r in rows))
    return path


def test_tiny_trace_summary_by_hand(tmp_path):
    s = summarize(str(_write(tmp_path / "t.csv", TINY)), window_s=5.0)
    assert s.kind == "trace" and s.requests == 8 and s.duration_s == 12.0
    assert s.mean_rate_qps == pytest.approx(7 / 12)  # 7 gaps over 12 s
    # windows [0,5) [5,10) [10,12]: 4, 3, 1 requests over 5, 5, 2 s
    assert [(w.start_s, w.length_s, w.requests) for w in s.windows] == [(0, 5, 4), (5, 5, 3), (10, 2, 1)]
    assert [w.rate_qps for w in s.windows] == pytest.approx([0.8, 0.6, 0.5])
    assert s.peak_rate_qps == pytest.approx(0.8)
    # gaps inside window 0: 1, 2, 1 -> mean 4/3, std sqrt(2)/3, CV sqrt(2)/4; window 1: 0.5, 2.5 -> CV 1/1.5
    cvs = [w.interarrival_cv for w in s.windows]
    assert cvs[0] == pytest.approx(math.sqrt(2) / 4) and cvs[1] == pytest.approx(2 / 3) and cvs[2] is None
    # weighted by gaps: sqrt((3 x 2/16 + 2 x 4/9) / 5)
    assert s.arrival_cv == pytest.approx(math.sqrt((3 * 2 / 16 + 2 * 4 / 9) / 5))
    # every gap 1,2,1,2,0.5,2.5,3: mean 12/7, E[g^2] 25.5/7 -> CV sqrt(34.5)/12
    assert s.interarrival_cv == pytest.approx(math.sqrt(34.5) / 12)
    i, o = s.input_tokens, s.output_tokens
    assert (i.mean_tokens, i.p50_tokens, i.p90_tokens, i.p99_tokens, i.max_tokens) == (450, 400, 800, 800, 800)
    assert (o.mean_tokens, o.p50_tokens, o.p90_tokens, o.p99_tokens, o.max_tokens) == (18.75, 10, 40, 40, 40)
    assert (i.distinct_values, o.distinct_values) == (8, 4)


def _azure_raw():
    with open(AZURE_CONV) as fh:
        rows = list(csv.reader(fh))[1:]
    t = np.array([r[0] for r in rows], dtype="datetime64[ns]").astype(np.int64) / 1e9
    return np.sort(t), np.array([int(r[1]) for r in rows]), np.array([int(r[2]) for r in rows])


def test_azure_conversation_trace_against_numpy():
    t, prompt, output = _azure_raw()
    assert len(t) == 19_366  # the README's row count
    s = summarize(str(AZURE_CONV), window_s=60.0)
    assert s.requests == 19_366
    span = t[-1] - t[0]
    assert s.duration_s == pytest.approx(span, abs=1e-6)
    assert s.mean_rate_qps == pytest.approx((len(t) - 1) / span)
    gaps = np.diff(t)
    assert s.interarrival_cv == pytest.approx(gaps.std() / gaps.mean(), rel=1e-6)
    num = den = 0.0  # per window, a loop: the squared CV of the gaps inside it, weighted by their count
    for k in range(math.ceil(span / 60)):
        inside = t[(t - t[0] >= 60 * k) & (t - t[0] < 60 * (k + 1))]
        g = np.diff(inside)
        if len(g) >= 2:
            num += len(g) * (g.std() / g.mean()) ** 2
            den += len(g)
    assert s.arrival_cv == pytest.approx(math.sqrt(num / den), rel=1e-6)
    assert len(s.windows) == math.ceil(span / 60) == 59
    assert sum(w.requests for w in s.windows) == 19_366
    for got, x in ((s.input_tokens, prompt), (s.output_tokens, output)):
        assert got.mean_tokens == pytest.approx(x.mean())
        want = np.percentile(x, [50, 90, 99], method="inverted_cdf")
        assert (got.p50_tokens, got.p90_tokens, got.p99_tokens) == tuple(want)
        assert got.max_tokens == x.max()
    # the figures the docs and the shipped problem quote
    assert round(s.mean_rate_qps, 2) == 5.53 and round(s.arrival_cv, 2) == 1.03
    assert (s.input_tokens.p99_tokens, s.output_tokens.p99_tokens) == (4142, 601)


def test_servegen_length_distribution_against_numpy():
    s = summarize(str(SERVEGEN_LENGTHS))
    assert s.kind == "lengths" and s.requests is None and s.windows == []
    with open(SERVEGEN_LENGTHS) as fh:
        rows = list(csv.DictReader(fh))
    for got, field in ((s.input_tokens, "input_tokens"), (s.output_tokens, "output_tokens")):
        t = np.array([max(int(r["tokens"]), 1) for r in rows if r["field"] == field], dtype=float)
        w = np.array([float(r["share"]) for r in rows if r["field"] == field])
        order = np.argsort(t, kind="stable")
        cum = np.cumsum(w[order]) / w.sum()
        assert got.mean_tokens == pytest.approx(np.dot(t, w) / w.sum())
        assert got.p99_tokens == t[order][np.argmax(cum >= 0.99 - 1e-12)]
    # the README's figures, to the rounding of its shares: input p50 601, output p50 53 / p99 ~872
    assert (s.input_tokens.p50_tokens, s.output_tokens.p50_tokens, s.output_tokens.p99_tokens) == (601, 53, 871)
    assert round(s.input_tokens.mean_tokens) == 911 and round(s.output_tokens.mean_tokens) == 155


# ---- bad files -------------------------------------------------------------------------------


@pytest.mark.parametrize("rows, header, message", [
    ([(0, 10, 5)], ("arrival_s", "prompt_tokens", "latency"), "t.csv:1: no column for output"),
    ([(0, 10, 5), (1, -3, 5)], None, "t.csv:3: prompt_tokens: expected a whole number of tokens"),
    ([(0, 10, 5), (1, 10, 2.5)], None, "t.csv:3: output_tokens: expected a whole number of tokens"),
    ([(0, 10, 5), ("soon", 10, 5)], None, "t.csv:3: arrival_s: expected seconds or an ISO date-time"),
    ([(5, 10, 5)], None, "t.csv: a trace needs at least two requests at different times"),
    ([(5, 10, 5), (5, 11, 5)], None, "a trace needs at least two requests at different times"),
])
def test_bad_trace_names_file_line_and_field(tmp_path, rows, header, message):
    path = _write(tmp_path / "t.csv", rows, *([header] if header else []))
    with pytest.raises(InputError, match=message.replace(".", r"\.")):
        summarize(str(path))


@pytest.mark.parametrize("text, message", [
    ("field,tokens\ninput_tokens,3\n", "l.csv:1: no column share"),
    ("field,tokens,share\ninput_tokens,3,0.5\nprompt,4,0.5\n", "l.csv:3: field: expected one of"),
    ("field,tokens,share\ninput_tokens,3,0.5\noutput_tokens,-4,0.5\n", "l.csv:3: tokens: expected a whole"),
    ("field,tokens,share\ninput_tokens,3,-1\noutput_tokens,4,0.5\n", "l.csv:2: share: expected a finite"),
    ("field,tokens,share\ninput_tokens,3,nan\noutput_tokens,4,0.5\n", "l.csv:2: share: expected a finite"),
    ("field,tokens,share\ninput_tokens,3,0.5\n", "l.csv: field: no output_tokens rows"),
])
def test_bad_length_file_names_file_line_and_field(tmp_path, text, message):
    path = tmp_path / "l.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=message.replace(".", r"\.")):
        summarize(str(path))


def test_only_bounded_regular_files(tmp_path):
    with pytest.raises(InputError, match="not a regular file"):
        summarize(str(tmp_path))
    big = tmp_path / "big.csv"
    with open(big, "wb") as fh:  # sparse: no disk used
        fh.write(b"arrival_s,prompt_tokens,output_tokens\n")
        fh.truncate((256 << 20) + 1)
    with pytest.raises(InputError, match="big.csv: 268,435,457 bytes, over the 268,435,456-byte limit"):
        summarize(str(big))
    big = tmp_path / "big-lengths.csv"
    with open(big, "wb") as fh:
        fh.write(b"field,tokens,share\n")
        fh.truncate((64 << 20) + 1)
    with pytest.raises(InputError, match="big-lengths.csv: 67,108,865 bytes, over the 67,108,864-byte limit"):
        summarize(str(big))
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo.csv")
        with pytest.raises(InputError, match="not a regular file"):
            summarize(str(tmp_path / "fifo.csv"))
    with pytest.raises(InputError, match="unknown trace 'no-such-trace'; shipped: azure-llm-2023-code"):
        summarize("no-such-trace")


def test_window_bounds(tmp_path):
    path = str(_write(tmp_path / "t.csv", TINY))
    with pytest.raises(InputError, match="window must be a positive number"):
        summarize(path, window_s=0.0)
    with pytest.raises(InputError, match="more than 1,000,000 windows"):
        summarize(path, window_s=1e-6)


# ---- problems naming data --------------------------------------------------------------------

PROBLEM = """name: t
services:
  - name: chat
    model: llama-3.1-8b
    workload:
{workload}
    slo: {{ttft_ms: {{p99: 2000}}, tpot_ms: 60}}
hardware:
  - type: h100-sxm
"""


def _problem(tmp_path: Path, workload: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(PROBLEM.format(workload="\n".join("      " + line for line in workload.splitlines())))
    return path


def test_trace_fills_rate_lengths_and_burstiness_relative_to_the_problem(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    _write(tmp_path / "data" / "t.csv", TINY)
    path = _problem(tmp_path, "trace: data/t.csv\nwindow_s: 5")
    monkeypatch.chdir(ROOT)  # the path resolves against the problem's folder, not the working directory
    wl = load_problem(path).problem.services[0].workload
    assert wl.qps == pytest.approx(7 / 12) and wl.arrival_cv == pytest.approx(math.sqrt((3 * 2 / 16 + 2 * 4 / 9) / 5))
    assert wl.trace == "data/t.csv"  # as written: the document does not depend on where the problem lies
    assert wl.input_tokens.histogram == [(t, 1.0) for t in range(100, 900, 100)]
    assert wl.output_tokens.histogram == [(10.0, 4.0), (20.0, 2.0), (30.0, 1.0), (40.0, 1.0)]
    assert (wl.input_tokens.mean_tokens, wl.input_tokens.p99_tokens) == (450, 800)
    # what the problem gives overrides the data
    path = _problem(tmp_path, "trace: data/t.csv\nqps: 3\narrival_cv: 2\noutput_tokens: 64")
    wl = load_problem(path).problem.services[0].workload
    assert (wl.qps, wl.arrival_cv, wl.output_tokens.mean_tokens, wl.input_tokens.mean_tokens) == (3, 2, 64, 450)


def test_lengths_file_gives_histograms_and_needs_a_rate(tmp_path):
    (tmp_path / "l.csv").write_text("field,tokens,share\ninput_tokens,100,3\ninput_tokens,500,1\n"
                                    "output_tokens,0,1\noutput_tokens,20,1\n")
    wl = load_problem(_problem(tmp_path, "lengths: l.csv\nqps: 4")).problem.services[0].workload
    assert wl.input_tokens.histogram == [(100.0, 3.0), (500.0, 1.0)]
    assert wl.input_tokens.mean_tokens == 200 and wl.input_tokens.p99_tokens == 500
    assert wl.output_tokens.histogram == [(1.0, 1.0), (20.0, 1.0)]  # a 0-token bin counts as 1 token
    assert wl.arrival_cv is None and wl.qps == 4
    with pytest.raises(InputError, match=r"p\.yaml:5: services\[0\]\.workload\.qps: .*needs qps"):
        load_problem(_problem(tmp_path, "lengths: l.csv"))


@pytest.mark.parametrize("workload, message", [
    ("trace: a.csv\nlengths: b.csv", "give trace: or lengths:, not both"),
    ("qps: 1\ninput_tokens: 10\noutput_tokens: 10\nwindow_s: 5", "window_s applies to a trace"),
    ("qps: 1\ninput_tokens: 10", "needs output_tokens"),
    ("trace: t.csv\narrival_cv: 0", "arrival_cv"),
    ("trace: t.csv\nspeed: 3", "speed"),
])
def test_workload_keys_are_checked(tmp_path, workload, message):
    with pytest.raises(InputError, match=message):
        load_problem(_problem(tmp_path, workload))


def test_bad_trace_in_a_problem_names_the_problem_line_then_the_file_line(tmp_path):
    _write(tmp_path / "t.csv", [(0, 10, 5), (1, 0, 5)])
    with pytest.raises(InputError) as exc:
        load_problem(_problem(tmp_path, "trace: t.csv"))
    assert f"{tmp_path / 'p.yaml'}:6: services[0].workload.trace: " in str(exc.value)
    assert "t.csv:3: prompt_tokens: expected a whole number of tokens in 1..10,000,000 (got '0')" in str(exc.value)
    with pytest.raises(InputError, match=r"p\.yaml:6: services\[0\]\.workload\.trace: .*missing\.csv: no such file"):
        load_problem(_problem(tmp_path, "trace: missing.csv"))


def test_inline_problem_resolves_shipped_trace_names():
    rp = parse_problem(PROBLEM.format(workload="      trace: azure-llm-2023-code"))
    wl = rp.problem.services[0].workload
    assert wl.trace == "azure-llm-2023-code"
    assert round(wl.qps, 3) == 2.566 and wl.arrival_cv > 3  # the code trace is bursty (CV 4.69 within minutes)


def test_jsonl_and_generic_csv_traces_give_the_same_summary(tmp_path):
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text("".join(f'{{"timestamp": {t}, "prompt_tokens": {p}, "output_tokens": {o}}}\n' for t, p, o in TINY))
    generic = _write(tmp_path / "g.csv", TINY, ("time_s", "input_length", "output_len"))
    a, b = summarize(str(jsonl), 5.0), summarize(str(generic), 5.0)
    assert a.model_dump(exclude={"file"}) == b.model_dump(exclude={"file"})
    assert a.requests == 8 and a.arrival_cv == pytest.approx(math.sqrt((3 * 2 / 16 + 2 * 4 / 9) / 5))
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"timestamp": 0, "prompt_tokens": 5, "output_tokens": 1}\n{"timestamp": 1, "prompt_tokens": 5}\n')
    with pytest.raises(InputError, match=r"b\.jsonl:2: output_tokens: missing value"):
        summarize(str(bad))


def test_a_sweep_of_qps_keeps_the_traces_lengths_and_burstiness(tmp_path):
    from solver.problem.sweep import expand

    _write(tmp_path / "t.csv", TINY)
    path = _problem(tmp_path, "trace: t.csv\nwindow_s: 5")
    path.write_text(path.read_text() + "sweep:\n  services[chat].workload.qps: [10, 20]\n")
    got = [(v.problem.problem.services[0].workload.qps, v.problem.problem.services[0].workload.arrival_cv,
            v.problem.problem.services[0].workload.input_tokens.mean_tokens) for v in expand(load_problem(path))]
    cv = math.sqrt((3 * 2 / 16 + 2 * 4 / 9) / 5)
    assert got == [(10, pytest.approx(cv), 450), (20, pytest.approx(cv), 450)]
