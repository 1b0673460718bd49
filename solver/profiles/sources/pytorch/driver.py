"""`collect`: check the request, resolve the device and the run's settings, measure each asked
family and write its table; `summary` lists what was written."""

from __future__ import annotations

import json
import os
import re
import sys
from datetime import date
from pathlib import Path
from typing import Callable, Iterable, Sequence

from solver.errors import InputError
from solver.profiles.format import FAMILIES
from solver.profiles.sources.pytorch.attention import collect_attention
from solver.profiles.sources.pytorch.comm import COMM_FAMILIES
from solver.profiles.sources.pytorch.device import device_name, import_torch, resolve_device, software
from solver.profiles.sources.pytorch.gemm import collect_gemm
from solver.profiles.sources.pytorch.grid import Shapes, default_shapes, quick_shapes
from solver.profiles.sources.pytorch.launch import collect_comm
from solver.profiles.sources.pytorch.timing import TIMING, Timer
from solver.profiles.sources.pytorch.writing import Writer

DEFAULT_FRAMEWORK = "torch-eager"
DEFAULT_LICENCE = "LicenseRef-own-measurement"
ALL_FAMILIES: tuple[str, ...] = (
    "gemm", "attention_context", "attention_generation", "allreduce", "collectives",
)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def _safe_name(value: str, what: str) -> str:
    if not _NAME.match(value or ""):
        raise InputError(f"{what} '{value}': use letters, digits, '.', '_', '+' or '-' "
                         f"(it names a folder)")
    return value


def _log_default(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _parse_families(families: str | Iterable[str]) -> list[str]:
    if isinstance(families, str):
        families = [f.strip() for f in families.split(",") if f.strip()]
    fams = list(dict.fromkeys(families))
    bad = [f for f in fams if f not in FAMILIES]
    if bad or not fams:
        raise InputError(f"unknown operator family '{','.join(bad) or '(none)'}' "
                         f"(one or more of {', '.join(ALL_FAMILIES)})")
    return fams


def _parse_dtypes(dtypes: str | Sequence[str]) -> list[str]:
    if isinstance(dtypes, str):
        dtypes = [d.strip() for d in dtypes.split(",") if d.strip()]
    dtypes = list(dict.fromkeys(dtypes))
    bad = [d for d in dtypes if d not in ("bf16", "fp8")]
    if bad or not dtypes:
        raise InputError(f"GEMM dtype '{','.join(bad) or '(none)'}': bf16 and/or fp8")
    return dtypes


def _check_counts(repeats: int | None, warmup: int | None, threads: int | None) -> None:
    if repeats is not None and repeats < 1:
        raise InputError(f"repeats must be at least 1, got {repeats}")
    if warmup is not None and warmup < 0:
        raise InputError(f"warmup must be 0 or more, got {warmup}")
    if threads is not None and threads < 1:
        raise InputError(f"threads must be at least 1, got {threads}")


def collect(
    hardware: str,
    framework_label: str = DEFAULT_FRAMEWORK,
    out_root: Path | str | None = None,
    families: str | Iterable[str] = ALL_FAMILIES,
    shapes: Shapes | None = None,
    device: str | None = None,
    dtypes: str | Sequence[str] = ("bf16",),
    repeats: int | None = None,
    warmup: int | None = None,
    quick: bool = False,
    models: Sequence[str] | None = None,
    processes: int | None = None,
    licence: str = DEFAULT_LICENCE,
    compress: bool = False,
    target_us: float | None = None,
    threads: int | None = None,
    comm_timeout_s: float = 1800.0,
    log: Callable[[str], None] | None = None,
) -> list[Path]:
    """Measure `families` on `device` and write `<out_root>/<hardware>/<framework_label>/
    <family>.csv[.gz]` + `.meta.json`; returns the CSV paths written.

    shapes: the grid (default `default_shapes(models)`, or `quick_shapes()` with quick=True).
    device: "cpu" or "cuda[:i]" (default: cuda when available). dtypes: GEMM element types,
    "bf16" and/or "fp8" (fp8 only where torch._scaled_mm runs; skipped otherwise, an error when
    it is the only one asked). processes: ranks of the CPU gloo mode (default 2; 0 or 1 skips
    the communication families on the CPU); on CUDA the world sizes are `shapes.num_gpus` that
    fit the visible GPUs, and the communication families are skipped with fewer than 2.
    threads: CPU threads for the CPU measurements (default: PyTorch's; 1 is steadier on a
    shared machine). out_root: default FLEETPLAN_PROFILES, else ./fleetplan-profiles."""
    log = log or _log_default
    hardware = _safe_name(hardware, "hardware name")
    framework_label = _safe_name(framework_label, "framework label")
    fams = _parse_families(families)
    dtypes = _parse_dtypes(dtypes)
    _check_counts(repeats, warmup, threads)

    torch = import_torch()
    dev = resolve_device(torch, device)
    cuda = dev.type == "cuda"
    before = torch.get_num_threads()
    if threads is not None and not cuda:
        torch.set_num_threads(threads)
    try:
        args = (torch, dev, hardware, framework_label, out_root, fams, shapes, dtypes, repeats,
                warmup, quick, models, processes, licence, compress, target_us, comm_timeout_s, log)
        if cuda:
            with torch.cuda.device(dev):  # events and streams on the measured device
                return _collect(*args)
        return _collect(*args)
    finally:
        torch.set_num_threads(before)


def _run_notes(cuda: bool, repeats: int, warmup: int, target_us: float, shapes: Shapes) -> tuple[str, ...]:
    """The notes every table of the run starts with."""
    timing = TIMING["cuda" if cuda else "cpu"].format(inner="N")
    notes = [
        "local measurement (first-party): fleetplan profiles collect, no upstream source",
        (f"latency: median of {repeats} timed repeats after {warmup} warmup calls; each repeat "
         f"times N back-to-back calls ({timing}, N chosen so a repeat lasts about "
         f"{target_us:.0f} us, at most 100) and divides by N"),
        f"grid: {shapes.description or 'custom'}",
    ]
    if not cuda:
        notes.append("measured on the CPU: a smoke test of the pipeline, not a model of "
                     "an accelerator")
    return tuple(notes)


def _collect(torch, dev, hardware, framework_label, out_root, fams, shapes, dtypes, repeats,
             warmup, quick, models, processes, licence, compress, target_us, comm_timeout_s,
             log) -> list[Path]:
    cuda = dev.type == "cuda"
    if shapes is None:
        shapes = quick_shapes() if quick else default_shapes(models)
    repeats = repeats if repeats is not None else (20 if cuda else 10)
    warmup = warmup if warmup is not None else (5 if cuda else 2)
    target_us = target_us if target_us is not None else (500.0 if cuda else 1000.0)
    if out_root is None:
        env = os.environ.get("FLEETPLAN_PROFILES")
        out_root = Path(env) if env else Path("fleetplan-profiles")
    timer = Timer(torch, dev, warmup, repeats, target_us)
    writer = Writer(
        folder=Path(out_root) / hardware / framework_label, compress=compress, cpu=not cuda,
        hardware=hardware, framework=framework_label, framework_version=str(torch.__version__),
        device_name=device_name(torch, dev), software=software(torch, dev),
        collected_on=date.today().isoformat(), licence=licence,
        notes=_run_notes(cuda, repeats, warmup, target_us, shapes),
    )
    written: list[Path] = []
    if "gemm" in fams:
        written.append(collect_gemm(torch, dev, timer, shapes, dtypes, writer, log))
    for phase in ("context", "generation"):
        if f"attention_{phase}" in fams:
            written.append(collect_attention(torch, dev, timer, shapes, phase, writer, log))
    comm = [f for f in fams if f in COMM_FAMILIES]
    if comm:
        written += collect_comm(torch, dev, timer, comm, shapes, processes, comm_timeout_s,
                                writer, log)
    return written


def summary(paths: Sequence[Path]) -> str:
    lines = []
    for p in paths:
        meta = json.loads(p.with_name(p.name.split(".csv")[0] + ".meta.json").read_text(encoding="utf-8"))
        lines.append(f"{p}  {meta['rows']} rows  {meta['framework']} {meta['framework_version']}  "
                     f"{meta['device_name']}")
    return "\n".join(lines)
