"""PyTorch and the measured device: importing torch on demand, resolving `--device`, the
device's name and software, the element types it runs."""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path

from solver import __version__
from solver.errors import InputError

TORCH_MISSING = "PyTorch is needed: pip install 'fleetplan[collect]'"
TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


class CollectError(InputError):
    """The measurement could not run here (no such device, a worker failed, ...)."""


def import_torch():
    """PyTorch, or a one-line InputError naming the extra to install."""
    try:
        import torch
    except ImportError:
        raise InputError(TORCH_MISSING) from None
    return torch


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _driver_version() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [x.strip() for x in out.stdout.splitlines() if x.strip()]
    return lines[0] if out.returncode == 0 and lines else None


def resolve_device(torch, device: str | None):
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        raise InputError(f"unknown device '{device}' (cpu or cuda)") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise InputError("--device cuda: no CUDA device is visible to PyTorch")
        if dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
        if dev.index >= torch.cuda.device_count():
            raise InputError(f"--device {device}: only {torch.cuda.device_count()} CUDA devices")
    elif dev.type != "cpu":
        raise InputError(f"device '{device}': the collector measures on cpu or cuda")
    return dev


def device_name(torch, dev) -> str:
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    return _cpu_name()


def software(torch, dev) -> dict[str, str]:
    sw = {"torch": str(torch.__version__), "python": platform.python_version(),
          "fleetplan": __version__}
    if dev.type == "cuda":
        if getattr(torch.version, "cuda", None):
            sw["cuda"] = str(torch.version.cuda)
        if getattr(torch.version, "hip", None):
            sw["hip"] = str(torch.version.hip)
        try:
            if torch.backends.cudnn.is_available():
                sw["cudnn"] = str(torch.backends.cudnn.version())
        except Exception:  # noqa: BLE001 - optional fact
            pass
        try:
            v = torch.cuda.nccl.version()
            sw["nccl"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
        except Exception:  # noqa: BLE001 - optional fact
            pass
        cap = torch.cuda.get_device_capability(dev)
        sw["compute_capability"] = f"{cap[0]}.{cap[1]}"
        drv = _driver_version()
        if drv:
            sw["driver"] = drv
    else:
        sw["cpu_threads"] = str(torch.get_num_threads())
        sw["platform"] = platform.platform()
    return sw


def working_dtype(torch, dev, name: str) -> str:
    """The element type actually used for `name` (bf16 falls back to fp32 on a CPU without)."""
    if name not in TORCH_DTYPES:
        return name
    try:
        dt = getattr(torch, TORCH_DTYPES[name])
        a = torch.ones(4, 4, dtype=dt, device=dev)
        torch.matmul(a, a)
        return name
    except (RuntimeError, TypeError):
        if dev.type == "cpu" and name != "fp32":
            return "fp32"
        raise


def free(torch, dev) -> None:
    if dev.type == "cuda":
        torch.cuda.empty_cache()
