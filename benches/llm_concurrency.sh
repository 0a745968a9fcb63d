#!/usr/bin/env bash
# Concurrency of the LLM executor against the shared mock LLM (not a test).
#
# Starts ../shared/bench/mock_llm.py (relative to the repo root) with 200 ms of
# latency, runs 200 judge calls at concurrency 16 (ideal: 200 * 0.2 / 16 = 2.5 s),
# then runs the same jobs again with the warm cache and reports the calls the mock saw.
# MOCK_ARGS adds mock options, e.g. MOCK_ARGS='--fail-rate 0.05 --malformed-rate 0.1'.
set -euo pipefail
cd "$(dirname "$0")/.."
MOCK=../shared/bench/mock_llm.py
if [[ ! -f $MOCK ]]; then
    echo "skipped: $MOCK not found (the shared bench lives next to the repository)"
    exit 0
fi
JOBS=${JOBS:-200}
CONC=${CONC:-16}
LATENCY_MS=${LATENCY_MS:-200}
work=$(mktemp -d)
trap 'kill "${mock_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT

cargo build --quiet --release --example llm_bench
bin=${CARGO_TARGET_DIR:-target}/release/examples/llm_bench

python3 "$MOCK" --port 0 --port-file "$work/port" --latency-ms "$LATENCY_MS" ${MOCK_ARGS:-} \
    --log "$work/requests.jsonl" --max-lifetime-s 600 >"$work/summary.json" 2>"$work/mock.err" &
mock_pid=$!
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.05; done
base="http://127.0.0.1:$(cat "$work/port")"

ideal=$(python3 -c "print(round($JOBS * $LATENCY_MS / 1000 / $CONC, 3))")
cold=$("$bin" --base "$base" --jobs "$JOBS" --concurrency "$CONC" --cache-dir "$work/cache")
calls_cold=$(wc -l <"$work/requests.jsonl")
warm=$("$bin" --base "$base" --jobs "$JOBS" --concurrency "$CONC" --cache-dir "$work/cache")
calls_warm=$(( $(wc -l <"$work/requests.jsonl") - calls_cold ))
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true
max_in_flight=$(python3 -c "import json,sys; print(json.load(open('$work/summary.json'))['max_in_flight'])")

echo "cold: $cold"
echo "warm: $warm"
python3 - "$cold" "$ideal" "$calls_cold" "$calls_warm" "$max_in_flight" <<'PY'
import json, sys
cold, ideal = json.loads(sys.argv[1]), float(sys.argv[2])
print(f"wall {cold['wall_s']} s vs ideal {ideal} s ({cold['wall_s'] / ideal:.2f}x); "
      f"mock saw {sys.argv[3]} calls cold, {sys.argv[4]} warm; max in flight {sys.argv[5]}")
PY
