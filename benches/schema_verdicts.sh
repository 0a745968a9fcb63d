#!/usr/bin/env bash
# Schema-bound against free-text verdicts on every bundled suite (not a test).
#
# Each suite is copied into a scratch project with `verdict_transport: text` or
# `schema`, and run in LLM mode against ../shared/bench/mock_llm.py with a high rate of
# malformed text replies (--malformed-rate 0.6) and, in a third pass, of schema
# violations (--schema-violation-rate 0.2). Per suite and pass it prints the units
# asked, the requests sent, the units asked again and the units left unreadable; for the
# violation pass, the violations the mock sent against the re-asks and unreadable units
# caldera reported (every violation must be one or the other: none is scored).
#
#   benches/schema_verdicts.sh            # every suite
#   SUITES="trivy semgrep" benches/schema_verdicts.sh
set -euo pipefail
cd "$(dirname "$0")/.."
MOCK=../shared/bench/mock_llm.py
if [[ ! -f $MOCK ]]; then
    echo "skipped: $MOCK not found (the shared bench lives next to the repository)"
    exit 0
fi
cargo build --quiet
bin=${CALDERA_BIN:-${CARGO_TARGET_DIR:-target}/debug/caldera}
work=$(mktemp -d)
trap 'kill "${mock_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
suites=${SUITES:-$(ls judges.d)}

start_mock() {
    python3 "$MOCK" --port 0 --port-file "$work/port" --latency-ms 5 "$@" \
        --log "$work/requests.jsonl" --max-lifetime-s 900 >"$work/summary.json" 2>"$work/mock.err" &
    mock_pid=$!
    for _ in $(seq 200); do [[ -s $work/port ]] && break; sleep 0.05; done
    export ANTHROPIC_API_KEY=bench ANTHROPIC_BASE_URL="http://127.0.0.1:$(cat "$work/port")"
}

stop_mock() {
    kill "$mock_pid" 2>/dev/null || true
    wait "$mock_pid" 2>/dev/null || true
    rm -f "$work/port"
}

# One suite in a scratch project with the given transport; prints the pass's figures.
run_suite() {
    local suite=$1 transport=$2 root="$work/project-$1-$2"
    rm -rf "$root"
    for dir in judges.d prompts ground-truth; do
        [[ -d $dir/$suite ]] && mkdir -p "$root/$dir" && cp -r "$dir/$suite" "$root/$dir/"
    done
    printf '\nverdict_transport: %s\n' "$transport" >>"$root/judges.d/$suite/suite.yaml"
    : >"$work/requests.jsonl"
    (cd "$root" && "$OLDPWD/$bin" run "judges.d/$suite" --cache off --concurrency 16 \
        --out "$root/result.json" >/dev/null 2>"$root/stderr") || true
    python3 - "$root/result.json" "$work/requests.jsonl" "$suite" "$transport" <<'EOF'
import json, sys
result_path, log_path, suite, transport = sys.argv[1:]
try:
    result = json.load(open(result_path))
except (OSError, ValueError):
    print(f"{suite:<14} {transport:<7} no result")
    sys.exit(0)
calls = [c for d in result["dimensions"] for c in d.get("llm_calls") or []]
for d in result["dimensions"]:
    calls += [c for r in d.get("per_repo") or [] for c in r.get("llm_calls") or []]
unreadable = sum(
    1 for d in result["dimensions"] for p in [d.get("reasoning") or ""] if "could not be read" in p
)
reasked = sum(1 for c in calls if c.get("reasked"))
kinds = {}
for line in open(log_path):
    k = json.loads(line).get("kind", "")
    kinds[k] = kinds.get(k, 0) + 1
violations = sum(v for k, v in kinds.items() if k.startswith("schema_violation"))
malformed = sum(v for k, v in kinds.items() if k.startswith("malformed"))
unscored_reasons = [
    p["message"] for p in result["summary"]["problems"] if p["kind"] == "unscored"
]
unreadable = sum(1 for m in unscored_reasons if "could not be read" in m)
print(
    f"{suite:<14} {transport:<7} units {len(calls):>4}  requests {result['usage']['requests']:>4}  "
    f"re-asked {reasked:>3}  unreadable {unreadable:>3}  mock: malformed {malformed:>3}, "
    f"schema violations {violations:>3}"
)
EOF
}

echo "== --malformed-rate 0.6"
start_mock --malformed-rate 0.6
for s in $suites; do run_suite "$s" text; run_suite "$s" schema; done
stop_mock
echo "== --malformed-rate 0.6 --schema-violation-rate 0.2"
start_mock --malformed-rate 0.6 --schema-violation-rate 0.2
for s in $suites; do run_suite "$s" schema; done
stop_mock
