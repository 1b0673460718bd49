"""`--arrival` specs made into sources over a service's workload."""

from __future__ import annotations

import numpy as np
import pytest

from solver.errors import InputError
from solver.replay.sources import ArrivalSource, ClosedLoop, services_source, workload_source, write_trace
from solver.schema.problem import Workload

WORK = Workload(qps=20, input_tokens={"mean": 2048, "p99": 6000}, output_tokens=150, max_context=8192)


def test_poisson_and_gamma_at_the_workload_rate_times_the_scale():
    src = workload_source("poisson", WORK, requests=4000, seed=1, rate_scale=2.0)
    assert isinstance(src, ArrivalSource) and len(src.table) == 4000
    gaps = np.diff(src.table.arrival_s)
    assert gaps.mean() == pytest.approx(1 / 40, rel=0.05)
    tab = src.table  # 150 output tokens, fewer where the prompt leaves less of max_context
    assert np.array_equal(tab.output_tokens, np.minimum(150, 8192 - tab.prompt_tokens))
    assert (tab.output_tokens < 150).any() and tab.prompt_tokens.max() <= 8191
    g = workload_source("gamma:2.5", WORK, requests=4000, seed=1)
    gaps = np.diff(g.table.arrival_s)
    assert gaps.std() / gaps.mean() == pytest.approx(2.5, rel=0.1)
    assert len(workload_source("poisson", WORK).table) == 2000  # the default count


def test_trace_spec_reads_the_file_with_scale_and_limit(tmp_path):
    path = tmp_path / "t.csv"
    write_trace(path, [0.0, 1.0, 2.0], [5, 6, 7], [1, 2, 3])
    src = workload_source(f"trace:{path}", WORK, requests=2, rate_scale=4.0)
    assert src.table.arrival_s.tolist() == [0.0, 0.25] and src.table.prompt_tokens.tolist() == [5, 6]


@pytest.mark.parametrize("spec,label", [("closed:8", "vllm bench serve --max-concurrency 8 --num-prompts 80"),
                                        ("closed:8:aiperf", "aiperf --concurrency 8 --request-count 80"),
                                        ("closed:8:sglang", "sglang.bench_serving --max-concurrency 8")])
def test_closed_specs_pick_the_tool(spec, label):
    src = workload_source(spec, WORK, seed=3)
    assert isinstance(src, ClosedLoop) and label in src.describe()
    assert len(src.phases[-1]) == 80 and src.phases[-1].concurrency == 8
    again = workload_source(spec, WORK, seed=3)
    assert np.array_equal(again.phases[-1].prompt_tokens, src.phases[-1].prompt_tokens)


@pytest.mark.parametrize("spec,why", [("uniform", "expected poisson"), ("gamma:", "expected poisson"),
                                      ("gamma:-1", "CV must be a positive"), ("closed:0", "whole number"),
                                      ("closed:2.5", "whole number"), ("closed:4:locust", "tool must be"),
                                      ("trace:/no/such/file.csv", "no such file")])
def test_bad_specs_are_input_errors(spec, why):
    with pytest.raises(InputError, match=why):
        workload_source(spec, WORK)


def test_bad_counts_and_scales():
    with pytest.raises(InputError, match="--requests"):
        workload_source("poisson", WORK, requests=0)
    with pytest.raises(InputError, match="--rate-scale"):
        workload_source("poisson", WORK, rate_scale=0)


def test_services_share_one_table_with_their_own_seeds_and_owners(tmp_path):
    chat = Workload(qps=10, input_tokens={"p50": 500, "p99": 4000}, output_tokens=100)
    code = Workload(qps=5, input_tokens=3000, output_tokens=20)
    src = workload_source("poisson", chat, requests=50, seed=7)
    both = services_source("poisson", [("chat", chat), ("code", code)], requests=50, seed=7)
    assert len(both.table) == 100 and "chat: poisson 10 req/s x 50" in both.describe()
    both.take(np.inf)
    owner = both.owner()
    assert (owner == 0).sum() == 50 and (owner == 1).sum() == 50
    # service 0 draws with the seed itself: the same requests as alone
    assert np.array_equal(both.table.prompt_tokens[owner == 0], src.table.prompt_tokens)
    assert (both.table.prompt_tokens[owner == 1] == 3000).all()
    path = tmp_path / "t.csv"
    write_trace(path, [0.0], [1], [1])
    with pytest.raises(InputError, match="a trace replays one service"):
        services_source(f"trace:{path}", [("chat", chat), ("code", code)])
    assert len(services_source(f"trace:{path}", [("chat", chat)]).table) == 1
