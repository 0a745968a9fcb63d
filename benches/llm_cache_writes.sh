#!/usr/bin/env bash
# Does the verdict cache slow calls down? (not a test)
#
# The LLM executor at concurrency CONC (64) over JOBS (2000) calls against the shared mock
# LLM with LATENCY_MS (200) of latency, three ways, each against a fresh mock, in SERIES (3)
# interleaved rounds: the bare asyncio client of the shared bench, caldera with the cache
# off, and caldera writing every verdict to a fresh cache. Prints the median wall time of
# each and the ratios to the bare client (ideal: JOBS * LATENCY / CONC).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=../shared/bench
if [[ ! -f $BENCH/mock_llm.py ]]; then
    echo "skipped: $BENCH/mock_llm.py not found (the shared bench lives next to the repository)"
    exit 0
fi
JOBS=${JOBS:-2000}
CONC=${CONC:-64}
LATENCY_MS=${LATENCY_MS:-200}
SERIES=${SERIES:-3}
work=$(mktemp -d)
trap 'kill "${mock_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT

# LLM_BENCH_BIN measures another build of the example (e.g. an older commit's).
bin=${LLM_BENCH_BIN:-}
if [[ -z $bin ]]; then
    cargo build --quiet --release --example llm_bench
    bin=${CARGO_TARGET_DIR:-target}/release/examples/llm_bench
fi

start_mock() {
    rm -f "$work/port"
    python3 "$BENCH/mock_llm.py" --port 0 --port-file "$work/port" --latency-ms "$LATENCY_MS" \
        --max-lifetime-s 600 >/dev/null 2>"$work/mock.err" &
    mock_pid=$!
    for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.05; done
    base="http://127.0.0.1:$(cat "$work/port")"
}
stop_mock() { kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true; }
wall() { python3 -c "import json,sys; print(json.loads(sys.argv[1])['wall_s'])" "$1"; }

: >"$work/walls"
for round in $(seq "$SERIES"); do
    start_mock
    echo "bare $(wall "$(python3 "$BENCH/ideal_client.py" --base "$base" -n "$JOBS" -c "$CONC")")" >>"$work/walls"
    stop_mock
    start_mock
    echo "off $(wall "$("$bin" --base "$base" --jobs "$JOBS" --concurrency "$CONC" --cache off)")" >>"$work/walls"
    stop_mock
    start_mock
    rm -rf "$work/cache"
    echo "on $(wall "$("$bin" --base "$base" --jobs "$JOBS" --concurrency "$CONC" --cache-dir "$work/cache")")" >>"$work/walls"
    stop_mock
    entries=$(find "$work/cache" -name '*.json' | wc -l)
    [[ $entries -eq $JOBS ]] || { echo "round $round: $entries cache entries, expected $JOBS" >&2; exit 1; }
done

python3 - "$work/walls" "$JOBS" "$CONC" "$LATENCY_MS" <<'PY'
import statistics, sys
walls = {}
for line in open(sys.argv[1]):
    kind, value = line.split()
    walls.setdefault(kind, []).append(float(value))
jobs, conc, latency = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
ideal = jobs * latency / 1000 / conc
bare = statistics.median(walls["bare"])
print(f"{jobs} calls at c={conc}, {latency:.0f} ms latency (ideal {ideal:.2f} s), medians of {len(walls['bare'])}:")
for kind, label in (("bare", "bare asyncio client"), ("off", "caldera, cache off"), ("on", "caldera, cache on")):
    m = statistics.median(walls[kind])
    print(f"  {label:<22} {m:6.2f} s  {m / bare:.2f}x bare   runs {walls[kind]}")
PY
