"""`fleetplan calibrate`'s summary: the fitted parameters against their bounds and the shipped
calibration's, and the errors per hardware card and model kind, fitted and held out side by
side (renders a calibration document; computes nothing)."""

from __future__ import annotations

from solver.schema.calibration import Calibration, FitError, ValidationGroup


def _pct(g: ValidationGroup | FitError | None, metric: str) -> str:
    if g is None:
        return "-"
    return f"{getattr(g, f'{metric}_median_abs_pct'):.1f}% ({getattr(g, f'{metric}_bias_pct'):+.1f})"


def calibration_text(cal: Calibration, bounds: dict[str, tuple[float, float]],
                     shipped: Calibration | None, out: str) -> str:
    """The summary printed after a refit; `bounds` per fitted parameter."""
    sp = cal.split
    lines = [f"calibrate {cal.engine} ({cal.predictor}): {cal.fitted_on}"]
    if sp is not None:
        lines.append(f"split: seed {sp.seed}, {sp.held_out_fraction:g} held out per hardware and model: "
                     f"{sp.fitted_rows} rows fitted, {sp.held_out_rows} held out (never fitted on)")
    lines += ["", f"{'parameter':<26} {'fitted':>9}  {'bounds':<13} {'shipped':>9}"]
    for name, (lo, hi) in bounds.items():
        ship = f"{getattr(shipped.params, name):.4g}" if shipped is not None else "-"
        lines.append(f"{name:<26} {getattr(cal.params, name):>9.4g}  {f'{lo:g}-{hi:g}':<13} {ship:>9}")
    lines += ["", "median |error| (signed mean) per group, fitted rows | held-out rows",
              f"{'hardware':<12} {'models':<6} {'rows fit/held':>13}  {'TTFT fitted':>15} {'TTFT held out':>15}  "
              f"{'TPOT fitted':>15} {'TPOT held out':>15}"]
    keys = sorted({(g.hardware, g.models) for g in cal.validation})
    for hw, kind in keys:
        fit = next((g for g in cal.validation if (g.hardware, g.models, g.fitted) == (hw, kind, True)), None)
        held = next((g for g in cal.validation if (g.hardware, g.models, g.fitted) == (hw, kind, False)), None)
        counts = f"{fit.rows if fit else 0}/{held.rows if held else 0}"
        lines.append(f"{hw:<12} {kind:<6} {counts:>13}  {_pct(fit, 'ttft'):>15} {_pct(held, 'ttft'):>15}  "
                     f"{_pct(fit, 'tpot'):>15} {_pct(held, 'tpot'):>15}")
    if sp is not None:
        lines.append(f"{'all':<12} {'':<6} {f'{sp.fitted_rows}/{sp.held_out_rows}':>13}  "
                     f"{_pct(sp.fitted_error, 'ttft'):>15} {_pct(sp.held_out_error, 'ttft'):>15}  "
                     f"{_pct(sp.fitted_error, 'tpot'):>15} {_pct(sp.held_out_error, 'tpot'):>15}")
    lines += ["", f"wrote {out} (a problem uses it with software: {{calibration: {out}}})"]
    return "\n".join(lines)


def calibration_yaml(cal: Calibration) -> str:
    """The calibration file: a header saying where it came from, then the document."""
    import yaml

    head = (f"# Calibration of the {cal.engine} engine parameters; written by fleetplan calibrate "
            f"(do not edit by hand).\n# Fitted on the user's measurements; the held-out rows "
            f"(split.held_out) were never fitted on.\n")
    return head + yaml.safe_dump(cal.model_dump(mode="json", exclude_unset=True), sort_keys=False, width=100)
