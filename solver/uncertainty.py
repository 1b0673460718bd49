"""How far a pool's predicted latencies may be off: error bands from measured validation.

Every engine calibration (`hardware/calibration/<engine>.yaml`) records the prediction error of
the performance model, with the fitted parameters, per hardware card and model kind (dense or
mixture-of-experts) on aiconfigurator-core's measured closed-loop benchmarks. A pool's band is
the median absolute error of the group it belongs to (half the validated points fall within
it); where no measured point exists for that card and kind, it borrows, in order:

1. the other model kind on the same card;
2. the largest median error of any group of that calibration (a card nobody measured is
   assumed to be as badly predicted as the worst measured one).

An engine without a calibration borrows the default engine's (vLLM) bands by the same rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from solver.perf.calibration import DEFAULT_ENGINE, ValidationGroup, load_calibration


@dataclass(frozen=True)
class ErrorBand:
    ttft_pct: float  # median absolute % error of TTFT predictions in the group
    tpot_pct: float
    source: str  # which measured rows the band comes from, in words


def _describe(engine: str, g: ValidationGroup, note: str = "") -> str:
    kind = "fitted" if g.fitted else "held out"
    text = f"{engine} calibration: {g.rows} measured {g.models} rows on {g.hardware} ({kind})"
    return f"{text}; {note}" if note else text


def error_band(engine: str | None, hardware: str, moe: bool) -> ErrorBand:
    name = engine or DEFAULT_ENGINE
    cal = load_calibration(name)
    prefix = ""
    if cal is None or not cal.validation:
        cal = load_calibration(DEFAULT_ENGINE)
        prefix = f"no calibration for {name}; "
        name = DEFAULT_ENGINE
    if cal is None or not cal.validation:
        raise FileNotFoundError(f"the {DEFAULT_ENGINE} calibration (hardware/calibration/) is missing")
    kind = "moe" if moe else "dense"
    same_card = [g for g in cal.validation if g.hardware == hardware]
    exact = [g for g in same_card if g.models == kind]
    if exact:
        g, note = exact[0], ""
    elif same_card:
        g, note = same_card[0], f"no {kind} rows on {hardware}, its {same_card[0].models} rows used"
    else:
        g = max(cal.validation, key=lambda v: max(v.ttft_median_abs_pct, v.tpot_median_abs_pct))
        note = f"no measured rows on {hardware}: the worst measured group is assumed"
    return ErrorBand(g.ttft_median_abs_pct, g.tpot_median_abs_pct, prefix + _describe(name, g, note))
