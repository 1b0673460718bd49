"""The real aiperf (PyPI, the `bench` extra) against a streaming stub server on loopback, and its
real profile export read by `fleetplan validate`: the latencies read match the stub's delays.

The stub (tests/support/openai_stub.py) sends the first token after TTFT_S and one token every
ITL_S; aiperf's TTFT also holds the client's connection set-up and request send (tens of ms on
a loaded machine), so TTFT is checked from TTFT_S up to TTFT_S + SETUP_S. aiperf needs a
tokenizer; a word-level one is built locally (no network). Bounded: REQUESTS requests at
CONCURRENCY, the stub refuses more than MAX_REQUESTS, aiperf is killed after TIMEOUT_S.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import cli
from tests.support.openai_stub import StubServer
from tests.support.plan_doc import write_plan

pytest.importorskip("aiperf")
tokenizers = pytest.importorskip("tokenizers")
AIPERF = shutil.which("aiperf", path=str(Path(sys.executable).parent)) or shutil.which("aiperf")
pytestmark = pytest.mark.skipif(AIPERF is None, reason="the aiperf command is not installed")

TTFT_S, ITL_S, TOKENS = 0.2, 0.02, 12
SETUP_S = 0.25  # client-side set-up aiperf counts in TTFT, at most (measured 30 ms on 2 busy cores)
CONCURRENCY, REQUESTS, MAX_REQUESTS = 2, 6, 50
TIMEOUT_S = 150


def _tokenizer(folder: Path) -> Path:
    """A word-level HuggingFace tokenizer: 'the' and w0..w499, whitespace-split."""
    vocab = {"[UNK]": 0, "the": 1, **{f"w{i}": i + 2 for i in range(500)}}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    folder.mkdir()
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]", "model_max_length": 100000}))
    return folder


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("aiperf")
    stub = StubServer(TTFT_S, ITL_S, TOKENS, max_requests=MAX_REQUESTS).start()
    try:
        run = subprocess.run(
            [AIPERF, "profile", "--model", "stub-model", "--url", stub.url, "--endpoint-type", "chat",
             "--streaming", "--tokenizer", str(_tokenizer(tmp / "tok")), "--concurrency", str(CONCURRENCY),
             "--request-count", str(REQUESTS), "--prompt-input-tokens-mean", "32",
             "--prompt-output-tokens-mean", str(TOKENS), "--random-seed", "1",
             "--workers-max", "1", "--record-processors", "1",
             "--output-artifact-dir", str(tmp / "out"), "--ui-type", "none"],
            capture_output=True, text=True, timeout=TIMEOUT_S, cwd=tmp)
    finally:
        stub.close()
    path = tmp / "out" / "profile_export_aiperf.json"
    assert run.returncode == 0 and path.is_file(), run.stdout[-3000:] + run.stderr[-3000:]
    assert stub.requests == REQUESTS
    return path


def test_validate_reads_aiperfs_real_export(export):
    r = cli("validate", str(export), "--model-card", "llama-3.1-8b", "--hardware", "h100-sxm", "--precision", "fp8",
            "--tp", "1", "--format", "json")
    assert r.returncode == 0, r.stderr
    [row] = json.loads(r.stdout)["rows"]
    assert (row["concurrency"], row["input_tokens"], row["output_tokens"]) == (CONCURRENCY, 32, TOKENS)
    assert TTFT_S * 1000 <= row["measured_ttft_ms"] <= (TTFT_S + SETUP_S) * 1000
    assert row["measured_tpot_ms"] == pytest.approx(ITL_S * 1000, rel=0.25)


def test_the_real_export_against_a_plan(export, tmp_path):
    r = cli("validate", str(export), "--plan", write_plan(tmp_path / "plan.json"), "--pool", "1", "--format", "json")
    assert r.returncode == 0, r.stderr
    [pool] = json.loads(r.stdout)["pools"]
    m = {x["metric"]: x for x in pool["latencies"]}
    assert TTFT_S * 1000 <= m["ttft_p50_ms"]["measured_ms"] <= (TTFT_S + SETUP_S) * 1000
    assert m["tpot_p50_ms"]["measured_ms"] == pytest.approx(ITL_S * 1000, rel=0.25)
    assert m["tpot_p50_ms"]["holds"] is True  # ~20 ms under the 25 ms bound
    assert pool["measured_concurrency"] == CONCURRENCY
