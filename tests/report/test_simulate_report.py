"""`fleetplan simulate`'s renderings (solver/report/simulate.py): the progress bar, the table."""

from __future__ import annotations

import io

import pytest

from solver.report.simulate import Progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal():
    pipe = io.StringIO()
    p = Progress(10, pipe)
    p.advance(10)
    p.close()
    assert pipe.getvalue() == ""
    tty = _Tty()
    p = Progress(4, tty)
    p.advance(4)  # the last one is always drawn
    assert "[" + "#" * 28 + "] 4/4 requests finished" in tty.getvalue()
    p.close()
    assert tty.getvalue().endswith("\r\x1b[K")


def test_progress_without_a_total_counts():
    tty = _Tty()
    p = Progress(0, tty)
    p.advance(3)
    assert "simulate 3 requests finished" in tty.getvalue()


def test_table_of_a_replay():
    sim = pytest.importorskip("solver.schema.simulation")
    from solver.report.simulate import simulate_text
    from tests.plan.test_simulate import replay_document  # a replay on stand-in instances

    doc = replay_document()
    assert isinstance(doc, sim.SimulationResult)
    text = simulate_text(doc)
    lines = text.splitlines()
    assert lines[0].startswith("llama3-70b-offline: replay of the optimal plan")
    assert lines[2].startswith("service 'batch-summaries' (llama-3.1-70b, mixed): offered")
    head = lines.index(next(ln for ln in lines if ln.startswith("role ")))
    rows = [ln.split() for ln in lines[head + 2:head + 6]]
    assert [r[0] for r in rows] == ["service", "colocated", "prefill", "decode"]
    assert [r[-14] for r in rows] == [str(s) for s in (doc.services[0].replay.requests,
                                                      *(p.replay.requests for p in doc.services[0].pools))]
    assert "(TTFT p50 " in lines[2]
