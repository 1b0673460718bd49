#!/usr/bin/env bash
# Re-run the AIConfigurator baseline timing by hand (not run in CI).
# aiconfigurator is NOT a fleetplan dependency: it lives in a throwaway venv under /tmp.
# Usage: benchmarks/time_aiconfigurator.sh [reps]   (default 3)
# Env:   AIC_VENV (default /tmp/aicvenv), AIC_VERSION (default 0.12.0)
set -euo pipefail

VENV="${AIC_VENV:-/tmp/aicvenv}"
VERSION="${AIC_VERSION:-0.12.0}"
REPS="${1:-3}"
OUTDIR="$(mktemp -d /tmp/aicrun.XXXXXX)"

if [ ! -x "$VENV/bin/aiconfigurator" ]; then
    echo "creating throwaway venv $VENV with aiconfigurator==$VERSION" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet "aiconfigurator==$VERSION"
fi

CMD=("$VENV/bin/aiconfigurator" cli default
     --model meta-llama/Meta-Llama-3.1-70B --system h200_sxm --total-gpus 16
     --isl 2000 --osl 150 --ttft 1000 --tpot 50)

echo "aiconfigurator $("$VENV/bin/pip" show aiconfigurator 2>/dev/null | awk '/^Version:/{print $2}')"
echo "command: ${CMD[*]}"
echo "outputs: $OUTDIR"

TIMEFMT="%e %M"   # wall seconds, peak RSS KB
walls=()
for i in $(seq 1 "$REPS"); do
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -o "$OUTDIR/time$i" -f "$TIMEFMT" "${CMD[@]}" >"$OUTDIR/run$i.out" 2>"$OUTDIR/run$i.err"
        read -r wall rss <"$OUTDIR/time$i"
    else
        start=$(date +%s.%N)
        "${CMD[@]}" >"$OUTDIR/run$i.out" 2>"$OUTDIR/run$i.err"
        wall=$(echo "$(date +%s.%N) - $start" | bc)
        rss="n/a"
    fi
    walls+=("$wall")
    echo "rep $i: wall=${wall}s peak_rss=${rss}KB"
done

median=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{a[NR]=$1} END{ if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2 }')
echo "median wall: ${median}s"
echo "--- headline (from rep 1) ---"
grep -E 'Best Experiment Chosen|Per-GPU Throughput' "$OUTDIR/run1.out" || true
