#!/usr/bin/env bash
# `caldera history` over many runs (not a test): wall time and peak RSS of the release
# binary reading a folder of RUNS (500) results of the trivy suite, in each format.
# The results are generated from one real heuristic run: each copy has its own run id
# and time, and every few runs a score, a piece of evidence or the mode (an LLM run
# with tokens and cost) moves, so the comparisons and the unstable-judge check work.
# Each case prints `case: seconds, max RSS in MB, exit status`.
# BIN=path/to/caldera measures another build.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z ${BIN:-} ]]; then
    cargo build --quiet --release --locked
    BIN=${CARGO_TARGET_DIR:-target}/release/caldera
fi
BIN=$(realpath "$BIN")
RUNS=${RUNS:-500}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$BIN" run judges.d/trivy --heuristic --quiet --out "$work/base.json" >/dev/null
mkdir "$work/results"
python3 - "$work/base.json" "$work/results" "$RUNS" <<'PY'
import copy, datetime, json, sys
base = json.load(open(sys.argv[1]))
out, runs = sys.argv[2], int(sys.argv[3])
start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
for i in range(runs):
    doc = copy.deepcopy(base)
    when = start + datetime.timedelta(hours=6 * i)
    doc["timestamp"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    doc["run_id"] = when.strftime("%Y%m%dT%H%M%SZ") + f"-{i:06x}"
    dims = doc["dimensions"]
    d = dims[i % len(dims)]
    if i % 3 == 1:
        d["score"] = max(1, min(5, d["score"] + (1 if i % 2 else -1)))
    if i % 5 == 2:
        d["evidence"]["bench_counter"] = i
    if i % 4 >= 2:
        doc["mode"], doc["model"] = "llm", "claude-sonnet-4-5"
        doc["usage"] = {"calls": len(dims), "verdicts": len(dims), "cached": 0,
                        "requests": len(dims), "input_tokens": 9000 + i,
                        "output_tokens": 1400, "cost_usd": 0.048 + i / 1e5}
    json.dump(doc, open(f"{out}/{doc['run_id']}.json", "w"))
PY
echo "$RUNS results: $(du -sm "$work/results" | cut -f1) MB"

measure() { # name, command...
    local name=$1
    shift
    local status=0
    /usr/bin/time -f '%e %M' -o "$work/time" "$@" >"$work/out" 2>"$work/err" || status=$?
    local secs=? kb=0
    read -r secs kb < <(grep -E '^[0-9.]+ [0-9]+$' "$work/time") || true
    echo "$name: ${secs} s, $((kb / 1024)) MB, exit ${status}"
}

# The files once into the page cache, as after `caldera run` wrote them.
cat "$work/results"/*.json >/dev/null
for format in table md html json; do
    measure "history of $RUNS runs, $format" "$BIN" history "$work/results" --format "$format" --out "$work/history.$format"
done
