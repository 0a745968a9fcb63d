#!/usr/bin/env bash
# Full `caldera run` in LLM mode against the shared mock LLM (not a test).
#
# 7 trivy judges x 29 panel members = 203 judge calls at --concurrency 16 against
# ../shared/bench/mock_llm.py with 200 ms latency (ideal: 203 * 0.2 / 16 = 2.54 s),
# then the same run with a warm cache, reporting the calls the mock saw each time.
set -euo pipefail
cd "$(dirname "$0")/.."
MOCK=../shared/bench/mock_llm.py
if [[ ! -f $MOCK ]]; then
    echo "skipped: $MOCK not found (the shared bench lives next to the repository)"
    exit 0
fi
CONC=${CONC:-16}
LATENCY_MS=${LATENCY_MS:-200}
MODELS=$(python3 -c "print(','.join(f'model-{i:02d}' for i in range(29)))")
work=$(mktemp -d)
trap 'kill "${mock_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT

cargo build --quiet --release
bin=${CARGO_TARGET_DIR:-target}/release/caldera

python3 "$MOCK" --port 0 --port-file "$work/port" --latency-ms "$LATENCY_MS" ${MOCK_ARGS:-} \
    --log "$work/requests.jsonl" --max-lifetime-s 600 >"$work/summary.json" 2>"$work/mock.err" &
mock_pid=$!
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.05; done
export ANTHROPIC_API_KEY=bench ANTHROPIC_BASE_URL="http://127.0.0.1:$(cat "$work/port")"

run() {
    local start end
    start=$(date +%s.%N)
    "$bin" run judges.d/trivy --models "$MODELS" --concurrency "$CONC" \
        --cache-dir "$work/cache" --out "$work/result.json" --json >/dev/null || true
    end=$(date +%s.%N)
    python3 -c "print(round($end - $start, 3))"
}
cold=$(run); calls_cold=$(wc -l <"$work/requests.jsonl")
warm=$(run); calls_warm=$(( $(wc -l <"$work/requests.jsonl") - calls_cold ))
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true
max_in_flight=$(python3 -c "import json; print(json.load(open('$work/summary.json'))['max_in_flight'])")
ideal=$(python3 -c "print(round($calls_cold * $LATENCY_MS / 1000 / $CONC, 3))")
echo "cold: ${cold} s for ${calls_cold} calls (ideal ${ideal} s, $(python3 -c "print(round($cold / $ideal, 2))")x), max in flight ${max_in_flight}"
echo "warm: ${warm} s, ${calls_warm} calls"
