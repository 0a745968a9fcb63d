#!/usr/bin/env bash
# Large panels (not a test): the trivy suite judged by MODELS (250) models against the
# shared mock LLM (no latency, models disagreeing as --model-agreement 0.7 makes them),
# SERIES (3) runs, each against a fresh mock. Reports the time from the mock's last
# answer to caldera's exit (the agreement statistics, the result, the table), the size
# of the result and the lines of the table. CALDERA_BIN picks the binary (default: the
# release build); EXTRA adds options, e.g. EXTRA=--panel-matrices.
set -euo pipefail
cd "$(dirname "$0")/.."
MOCK=../shared/bench/mock_llm.py
if [[ ! -f $MOCK ]]; then
    echo "skipped: $MOCK not found (the shared bench lives next to the repository)"
    exit 0
fi
MODELS=${MODELS:-250}
SERIES=${SERIES:-3}
work=$(mktemp -d)
trap 'kill "${mock_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
if [[ -z ${CALDERA_BIN:-} ]]; then
    cargo build --quiet --release
    CALDERA_BIN=${CARGO_TARGET_DIR:-target}/release/caldera
fi
models=$(python3 -c "print(','.join(f'model-{i:03d}' for i in range($MODELS)))")

for round in $(seq "$SERIES"); do
    rm -f "$work/port"
    python3 "$MOCK" --port 0 --port-file "$work/port" --model-agreement 0.7 \
        --max-lifetime-s 600 >"$work/summary.json" 2>/dev/null &
    mock_pid=$!
    for _ in $(seq 200); do [[ -s $work/port ]] && break; sleep 0.05; done
    ANTHROPIC_API_KEY=bench ANTHROPIC_BASE_URL="http://127.0.0.1:$(cat "$work/port")" \
        "$CALDERA_BIN" run judges.d/trivy --models "$models" --cache off --concurrency 64 \
        --out "$work/result.json" ${EXTRA:-} >"$work/table.txt" 2>/dev/null || true
    ended=$(date +%s.%N)
    kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true
    python3 - "$work/summary.json" "$ended" "$work/result.json" "$work/table.txt" <<'PY' >>"$work/rounds"
import json, os, sys
summary = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
after = float(sys.argv[2]) - summary["last_t"]
size = os.path.getsize(sys.argv[3]) if os.path.exists(sys.argv[3]) else 0
lines = sum(1 for _ in open(sys.argv[4]))
print(json.dumps({"requests": summary["requests"], "after_last_answer_s": after,
                  "result_bytes": size, "table_lines": lines}))
PY
done

python3 - "$work/rounds" "$MODELS" <<'PY'
import json, statistics, sys
rounds = [json.loads(l) for l in open(sys.argv[1])]
after = [r["after_last_answer_s"] for r in rounds]
print(f"panel of {sys.argv[2]} models on the trivy suite, {rounds[0]['requests']} requests, "
      f"{len(rounds)} runs:")
print(f"  after the last answer: median {statistics.median(after) * 1000:.0f} ms "
      f"(runs {', '.join(f'{a * 1000:.0f}' for a in after)} ms)")
print(f"  result {rounds[0]['result_bytes'] / 1e6:.2f} MB, table {rounds[0]['table_lines']} lines")
PY
