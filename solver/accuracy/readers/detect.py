"""Which tool wrote a measured file: the CSV of `fleetplan validate`, aiperf's profile export
JSON, `vllm bench serve`'s result JSON, guidellm's report or loadgen's mlperf_log_summary.txt.

Detection reads the content, never the name: each reader's `looks_like` checks the fields its
tool always writes (see each reader's docstring for the writer it follows).
"""

from __future__ import annotations

from solver.accuracy.readers import aiperf, guidellm, mlperf, vllm_bench
from solver.accuracy.readers.common import BenchPoint, load_json
from solver.errors import InputError

FORMATS = ("csv", "aiperf", "vllm", "guidellm", "mlperf")
READERS = {"aiperf": aiperf.read, "vllm": vllm_bench.read, "guidellm": guidellm.read, "mlperf": mlperf.read}


def detect(path: str, text: str) -> str:
    """One of FORMATS; InputError when the content is none of them."""
    head = text.lstrip()[:1]
    if mlperf.looks_like(text):
        return "mlperf"
    if head in ("{", "["):
        doc = load_json(path, text)
        first = doc[0] if isinstance(doc, list) and doc else doc
        for name, looks in (("aiperf", aiperf.looks_like), ("guidellm", guidellm.looks_like),
                            ("vllm", vllm_bench.looks_like)):
            if looks(first):
                return name
        raise InputError(f"{path}:1: a JSON document of no known benchmark tool (expected aiperf's "
                         "profile_export_aiperf.json, a `vllm bench serve` result or a guidellm report)")
    first_line = text.splitlines()[0] if text.strip() else ""
    if "," in first_line:  # the CSV reader names a missing column
        return "csv"
    raise InputError(f"{path}:1: not a measured file fleetplan reads (a validate CSV, aiperf's profile "
                     "export JSON, a `vllm bench serve` result JSON, a guidellm report or an "
                     "mlperf_log_summary.txt)")


def read_points(path: str, text: str, fmt: str) -> list[BenchPoint]:
    return READERS[fmt](path, text)
