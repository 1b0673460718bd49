"""Fit each engine's parameters to measured end-to-end benchmarks on h100_sxm ONLY.

    python benchmarks/calibrate.py [--data benchmarks/data/silicon_sample_validate.csv]
        [--model closed-form|replay] [--engines vllm ...] [--every 3] [--evals-roofline 20]
        [--evals-step 10]
    python benchmarks/calibrate.py --errors-only [--model closed-form|replay] [--validation-only | --split-only]

Without --model a fit runs through the replay (how the shipped files are fitted) and
--errors-only uses each file's own `predictor`.

`--model closed-form` (the original fit) scores candidates with the closed form of
solver/perf/closed_loop.py, wave-law terms and mixed-batch slowdown included; `--model replay`
scores them by replaying each row's benchmark (solver/accuracy/replay_fit.py: physical
parameters only, on every `--every`-th fitted row, then a final evaluation on every fitted
row).

Accuracy discipline (issue: measured profiles and calibration): the fit uses only the rows
whose source system is h100_sxm (dense models, colocated); every other system's rows are
held out and only reported. Writes hardware/calibration/<engine>.yaml with the fitted
EngineParams, the data's sha256, the fit error and the held-out error per system.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
from collections import defaultdict
from pathlib import Path

import numpy as np
import yaml

from solver.accuracy.fit import EFFICIENCY_FIELDS, FIT_BOUNDS, MEAN_WEIGHT, TRIM_FACTOR, fit_engine, robust_loss
from solver.accuracy.replay_fit import EAGER_LAYER_HOST_MS, REPLAY_BOUNDS, REQUEST_OVERHEAD_MS, fit_replay
from solver.accuracy.replay_rows import replay_rows
from solver.accuracy.validate import parse_measured, predict_rows
from solver.catalog import shipped
from solver.catalog.calibration import load_calibration
from solver.perf.arch import ModelArch
from solver.schema.engine import EngineParams

ROOT = Path(__file__).resolve().parent.parent
FIT_SYSTEM = "h100_sxm"
REPLAY_PARAMS = ("gemm_efficiency_factor", "memory_efficiency_factor", "step_overhead_ms",
                 "eager_layer_host_ms", "request_overhead_ms", "mixed_batch_slowdown")  # what a replay calibration writes
EAGER_ENGINES = ("trtllm",)  # phase 2b (eager_layer_host_ms): engines whose overlap scheduler emits late


def _predict(model: str, data: Path, rows, params: EngineParams):
    """Predicted (TTFT, TPOT) of `rows` with `params` by the closed form or the replay."""
    if model == "replay":
        return replay_rows(str(data), rows, lambda _e: params, slowdown=1.0)
    return predict_rows(str(data), rows, lambda _e: params)


def _dense(model: str) -> bool:
    return ModelArch.from_card(shipped.model_card(model)).moe_layers == 0


def _errors(rows, ttft, tpot) -> dict:
    mt = np.array([r.ttft_ms for r in rows])
    mp = np.array([r.tpot_ms for r in rows])
    e1 = (ttft - mt) / mt * 100
    e2 = (tpot - mp) / mp * 100
    return dict(rows=len(rows), ttft_median_abs_pct=round(float(np.median(np.abs(e1))), 2),
                tpot_median_abs_pct=round(float(np.median(np.abs(e2))), 2),
                ttft_bias_pct=round(float(np.mean(e1)), 2), tpot_bias_pct=round(float(np.mean(e2)), 2))


def _group(hw: str, kind: str, model: str | None, rs, ttft, tpot) -> dict:
    """One validation group's errors from its rows' predictions."""
    mt = np.array([r.ttft_ms for r in rs])
    mp = np.array([r.tpot_ms for r in rs])
    s1, s2 = (ttft - mt) / mt * 100, (tpot - mp) / mp * 100
    e1, e2 = np.abs(s1), np.abs(s2)
    fitted = kind == "dense" and all(r.raw.get("source_system") == FIT_SYSTEM for r in rs)
    return dict(
        hardware=hw, models=kind, **({"model": model} if model else {}), fitted=fitted, rows=len(rs),
        ttft_median_abs_pct=round(float(np.median(e1)), 2),
        ttft_p90_abs_pct=round(float(np.percentile(e1, 90)), 2),
        ttft_bias_pct=round(float(np.mean(s1)), 2),
        tpot_median_abs_pct=round(float(np.median(e2)), 2),
        tpot_p90_abs_pct=round(float(np.percentile(e2, 90)), 2),
        tpot_bias_pct=round(float(np.mean(s2)), 2),
    )


def _validation(rows, params: EngineParams, data: Path, model: str = "closed-form",
                keep: list | None = None) -> list[dict]:
    """Error per (hardware card, dense or MoE) over every row of one engine, with `params`, by
    the calibration's predictor `model` (the plans' error bands, solver/decision/bands.py, read
    these groups: with a replay calibration they are the replay's errors); where a group holds
    several model cards, each card's rows again as a group of their own (`model`), from the
    same predictions (a group of one card is that card's group). `keep`: the file's current
    groups; a group of one card found there with the same rows is kept without predicting it
    again (`--split-only`, when only the split of multi-card groups is new)."""
    kept = {(g["hardware"], g["models"], g["rows"]): g for g in keep or [] if not g.get("model")}
    groups: dict[tuple[str, str], list] = defaultdict(list)
    for r in rows:
        groups[(r.hardware, "dense" if _dense(r.model) else "moe")].append(r)
    out = []
    for (hw, kind), rs in sorted(groups.items()):
        cards = sorted({r.model for r in rs})
        if len(cards) == 1 and (hw, kind, len(rs)) in kept:
            out.append(kept[(hw, kind, len(rs))])
            continue
        ttft, tpot = _predict(model, data, rs, params)
        out.append(_group(hw, kind, None, rs, ttft, tpot))
        for card in cards if len(cards) > 1 else []:
            idx = [k for k, r in enumerate(rs) if r.model == card]
            out.append(_group(hw, kind, card, [rs[k] for k in idx], ttft[idx], tpot[idx]))
    return out


def _errors_only(rows, data: Path, out_dir: Path, engines, model_arg: str | None = None,
                 validation_only: bool | str = False) -> None:
    """Recompute the `validation` block of the shipped calibrations (no fitting), and the fit
    error (and, with the replay, the held-out error) with the predictor `model`
    (`validation_only`: the validation block alone)."""
    for engine in engines:
        path = out_dir / f"{engine}.yaml"
        cal = load_calibration(engine)
        if cal is None:
            print(f"{engine}: no calibration file; skipped")
            continue
        text = path.read_text()
        header = "".join(ln for ln in text.splitlines(keepends=True) if ln.startswith("#"))
        doc = yaml.safe_load(text)
        model = model_arg or cal.predictor
        keep = doc.get("validation") if validation_only == "split" else None
        doc["validation"] = _validation([r for r in rows if r.engine == engine], cal.params, data, model, keep)
        if validation_only:
            path.write_text(header + yaml.safe_dump(doc, sort_keys=False, width=100))
            print(f"{engine}: validation block rewritten ({len(doc['validation'])} groups)", flush=True)
            continue
        fit_rows = _fit_rows(rows, engine)
        doc["predictor"] = model
        doc["fit_error"] = _errors(fit_rows, *_predict(model, data, fit_rows, cal.params))
        if model == "replay":
            doc["held_out_error"] = {s: _errors(rs, *_predict(model, data, rs, cal.params))
                                     for s, rs in sorted(_held_rows(rows, engine).items())}
        path.write_text(header + yaml.safe_dump(doc, sort_keys=False, width=100))
        print(f"{engine}: fit error and validation block rewritten ({len(doc['validation'])} groups)")


def _fit_rows(rows, engine: str) -> list:
    """The rows an engine is fitted on: its h100_sxm dense rows."""
    return [r for r in rows if r.engine == engine and r.raw.get("source_system") == FIT_SYSTEM
            and _dense(r.model)]


def _held_rows(rows, engine: str) -> dict[str, list]:
    held = defaultdict(list)
    for r in rows:
        if r.engine == engine and r.raw.get("source_system") != FIT_SYSTEM:
            held[r.raw.get("source_system", r.hardware)].append(r)
    return held


def _header(engine: str) -> str:
    return (f"# Calibration of the {engine} engine parameters; written by "
            f"benchmarks/calibrate.py (do not edit by hand).\n"
            f"# Fitted ONLY on {FIT_SYSTEM} rows; other systems are held out.\n")


def _fit_replay_engine(a, rows, engine: str, sha: str, out_dir: Path) -> None:
    """`--model replay` for one engine: the fit, a final replay of every fitted row, the file."""
    fit_rows = _fit_rows(rows, engine)
    if not fit_rows:
        print(f"{engine}: no {FIT_SYSTEM} dense rows; not calibrated")
        return
    start, phase1 = EngineParams(), f"Nelder-Mead over the efficiency factors, {a.evals_roofline} evaluations"
    if a.keep_efficiency:  # phase 1 not rerun: the shipped file's factors
        old = load_calibration(engine).params
        start = start.model_copy(update={f: getattr(old, f) for f in EFFICIENCY_FIELDS})
        a.evals_roofline, phase1 = 0, ("not rerun, the efficiency factors kept from the previous file ("
                                       + ", ".join(f"{f} {getattr(old, f):g}" for f in EFFICIENCY_FIELDS) + ")")
    eager = a.evals_eager if engine in EAGER_ENGINES else 0
    params, value = fit_replay(str(a.data), fit_rows, start, every=a.every,
                               evals_roofline=a.evals_roofline, evals_step=a.evals_step,
                               say=lambda m: print(m, flush=True), evals_eager=eager)
    phase2b = (f"; phase 2b: golden section over eager_layer_host_ms in {list(EAGER_LAYER_HOST_MS)} at the best "
               f"step overhead, {eager} evaluations" if eager else "")
    after = _errors(fit_rows, *_predict("replay", a.data, fit_rows, params))
    print(f"{engine}: replay fit on all {len(fit_rows)} rows: {after}; subsample loss {value:.4f}", flush=True)
    doc = {
        "engine": engine,
        "params": {name: round(getattr(params, name), 4) for name in REPLAY_PARAMS},
        "fitted_on": f"{a.data.name}: {len(fit_rows)} rows, source system {FIT_SYSTEM}, dense "
                     f"models, colocated (aiconfigurator-core 0.12.0 silicon_sample.csv)",
        "source_sha256": sha,
        "fitted_at": dt.date.today().isoformat(),
        "method": f"replay (fleetplan validate --model replay: each row's benchmark replayed, no "
                  f"wave law, mixed-batch slowdown 1); loss median |log(pred/measured)| of TTFT + "
                  f"that of TPOT + {MEAN_WEIGHT:g} x mean min(|log(pred/measured)|, log "
                  f"{TRIM_FACTOR:g}) of both, on every {a.every}th fitted row; phase 1 without "
                  f"measured tables: {phase1}; phase 2 with them: golden section over step_overhead_ms, "
                  f"{a.evals_step} evaluations{phase2b}; request_overhead_ms solved exactly per "
                  f"evaluation on a grid over {list(REQUEST_OVERHEAD_MS)}; bounds "
                  f"{[(n, lo, hi) for n, lo, hi in REPLAY_BOUNDS]}",
        "predictor": "replay",
        "fit_error": after,
        "held_out_error": {},
        "validation": _validation([r for r in rows if r.engine == engine], params, a.data, "replay"),
    }
    (out_dir / f"{engine}.yaml").write_text(_header(engine) + yaml.safe_dump(doc, sort_keys=False, width=100))
    print(f"  params {doc['params']}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=ROOT / "benchmarks" / "data" / "silicon_sample_validate.csv")
    ap.add_argument("--max-evals", type=int, default=300)
    ap.add_argument("--engines", nargs="*", default=["vllm", "sglang", "trtllm"])
    ap.add_argument("--model", choices=["closed-form", "replay"], default=None,
                    help="the predictor the fit scores candidates with (default: replay, the shipped "
                         "files' method); with --errors-only, default: each file's own predictor")
    ap.add_argument("--every", type=int, default=3, help="replay: fit on every N-th fitted row")
    ap.add_argument("--evals-roofline", type=int, default=20, help="replay: phase 1 evaluations")
    ap.add_argument("--evals-step", type=int, default=10, help="replay: phase 2 evaluations")
    ap.add_argument("--evals-eager", type=int, default=8,
                    help="replay: phase 2b evaluations (eager_layer_host_ms; TensorRT-LLM only)")
    ap.add_argument("--keep-efficiency", action="store_true",
                    help="replay: skip phase 1 and keep the efficiency factors of the shipped file")
    ap.add_argument("--errors-only", action="store_true",
                    help="keep the fitted parameters; only recompute the fit error and the "
                         "validation block")
    ap.add_argument("--validation-only", action="store_true",
                    help="with --errors-only: recompute the validation block alone")
    ap.add_argument("--split-only", action="store_true",
                    help="with --errors-only: the validation block alone, keeping the file's groups "
                         "of one model card (only groups of several cards are predicted again)")
    a = ap.parse_args()
    text = a.data.read_text()
    sha = hashlib.sha256(text.encode()).hexdigest()
    _, rows = parse_measured(str(a.data), text)
    out_dir = ROOT / "hardware" / "calibration"
    out_dir.mkdir(parents=True, exist_ok=True)
    if a.errors_only:
        _errors_only(rows, a.data, out_dir, a.engines, a.model,
                     "split" if a.split_only else a.validation_only)
        return
    if (a.model or "replay") == "replay":
        for engine in a.engines:
            _fit_replay_engine(a, rows, engine, sha, out_dir)
        return
    for engine in a.engines:
        fit_rows = _fit_rows(rows, engine)
        held = defaultdict(list)
        for r in rows:
            if r.engine == engine and r.raw.get("source_system") != FIT_SYSTEM:
                held[r.raw.get("source_system", r.hardware)].append(r)
        if not fit_rows:
            print(f"{engine}: no {FIT_SYSTEM} dense rows; not calibrated")
            continue
        meas_t = np.array([r.ttft_ms for r in fit_rows])
        meas_p = np.array([r.tpot_ms for r in fit_rows])

        def loss_with(tables: bool):
            def loss(params: EngineParams) -> float:
                t, p = predict_rows(str(a.data), fit_rows, lambda _e: params, tables=tables)
                return robust_loss(np.log(t / meas_t), np.log(p / meas_p))
            return loss

        start = EngineParams()
        before = _errors(fit_rows, *predict_rows(str(a.data), fit_rows, lambda _e: start))
        # Phase 1, measured tables off: the efficiency factors (how far kernels at model shapes
        # fall below the card's ceilings) are what hardware without tables uses.
        roof, _ = fit_engine(loss_with(False), start, max_evals=a.max_evals)
        # Phase 2, tables on: the overheads, the wave size and the mixed-batch slowdown, with
        # the efficiency factors fixed (they barely touch measured operators).
        overheads = tuple(n for n, _, _ in FIT_BOUNDS if n not in EFFICIENCY_FIELDS)
        # multi-start: the staggered steady state (from phase 1), waves of sqrt(N), and the
        # lockstep benchmark (one wave of all N), which some engines' schedulers keep up
        starts = [roof] + [roof.model_copy(update={"wave_size_coefficient": 1.0,
                                                   "wave_size_exponent": e}) for e in (0.5, 1.0)]
        shipped = load_calibration(engine)
        if shipped is not None:
            starts.append(shipped.params.model_copy(
                update={f: getattr(roof, f) for f in EFFICIENCY_FIELDS}))
        fits = [fit_engine(loss_with(True), s0, max_evals=a.max_evals, fields=overheads)
                for s0 in starts]
        params, value = min(fits, key=lambda pv: pv[1])
        after = _errors(fit_rows, *predict_rows(str(a.data), fit_rows, lambda _e: params))
        held_err = {}
        for system, rs in sorted(held.items()):
            held_err[system] = _errors(rs, *predict_rows(str(a.data), rs, lambda _e: params))
        # a metric may give up at most 5 points for a larger gain on the other
        worse = [m for m in ("ttft_median_abs_pct", "tpot_median_abs_pct") if after[m] > before[m] + 5.0]
        gain = sum(before[m] - after[m] for m in ("ttft_median_abs_pct", "tpot_median_abs_pct"))
        if worse or gain <= 0:
            # the engine's behaviour is outside what the model's parameters can express: keep
            # the uncalibrated defaults rather than ship a fit that is worse on some metric
            print(f"{engine}: fit does not improve ({before} -> {after}); not written")
            continue
        fitted = {name: round(getattr(params, name), 4) for name, _, _ in FIT_BOUNDS}
        doc = {
            "engine": engine,
            "params": fitted,
            "fitted_on": f"{a.data.name}: {len(fit_rows)} rows, source system {FIT_SYSTEM}, dense "
                         f"models, colocated (aiconfigurator-core 0.12.0 silicon_sample.csv)",
            "source_sha256": sha,
            "fitted_at": dt.date.today().isoformat(),
            "method": f"Nelder-Mead on median |log(pred/measured)| of TTFT + that of TPOT + "
                      f"{MEAN_WEIGHT:g} x mean min(|log(pred/measured)|, log {TRIM_FACTOR:g}) of "
                      f"both, {a.max_evals} "
                      f"evaluations per phase; phase 1 without measured tables fits the efficiency "
                      f"factors, phase 2 with them fits the rest; bounds "
                      f"{[(n, lo, hi) for n, lo, hi in FIT_BOUNDS]}",
            "fit_error": after,
            "held_out_error": held_err,
            "validation": _validation([r for r in rows if r.engine == engine], params, a.data),
        }
        path = out_dir / f"{engine}.yaml"
        header = (f"# Calibration of the {engine} engine parameters; written by "
                  f"benchmarks/calibrate.py (do not edit by hand).\n"
                  f"# Fitted ONLY on {FIT_SYSTEM} rows; other systems are held out.\n")
        path.write_text(header + yaml.safe_dump(doc, sort_keys=False, width=100))
        print(f"{engine}: {len(fit_rows)} fit rows; before {before}; after {after}; loss {value:.4f}")
        print(f"  params {fitted}")
        for system, e in held_err.items():
            print(f"  held out {system}: {e}")


if __name__ == "__main__":
    main()
