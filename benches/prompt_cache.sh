#!/usr/bin/env bash
# What prompt caching and batches save (not a test).
#
# Runs the trivy suite with --repeat 5, and a per-repo judge over 100 repos whose rubric
# sits above `<< cache_break >>`, against ../shared/bench/mock_llm.py (which bills
# like the real API: cache writes, reads, minimum prefix, batch half price) three ways:
# prompt caching off, prompt caching on (the default for repeats), and caching with
# --batch. For each it prints what the mock billed, priced at sonnet's list prices
# (input $2, output $10 per million tokens; cache writes 1.25x, reads 0.1x; batches
# half), against the same tokens at list price without caching or batches, input and
# output apart, and the run's wall time.
#
#   benches/prompt_cache.sh              # REPEAT=5 LATENCY_MS=200 by default
set -euo pipefail
cd "$(dirname "$0")/.."
MOCK=../shared/bench/mock_llm.py
if [[ ! -f $MOCK ]]; then
    echo "skipped: $MOCK not found (the shared bench lives next to the repository)"
    exit 0
fi
REPEAT=${REPEAT:-5}
LATENCY_MS=${LATENCY_MS:-200}
cargo build --quiet
bin=${CALDERA_BIN:-${CARGO_TARGET_DIR:-target}/debug/caldera}
work=$(mktemp -d)
trap 'kill "${mock_pid:-}" 2>/dev/null || true; [[ -n ${KEEP:-} ]] || rm -rf "$work"' EXIT

# A per-repo judge over 100 repos whose prompt marks its shared part (a rubric of about
# 1,500 tokens) with `<< cache_break >>`, in `$1`.
per_repo_project() {
    local suite="$1/judges.d/per-repo"
    mkdir -p "$suite/outputs"
    printf 'suite: per-repo\ninputs:\n  results: outputs\nmodel: sonnet\n' >"$suite/suite.yaml"
    cat >"$suite/findings.yaml" <<'YAML'
dimension: findings_per_repo
weight: 1.0
scope: repo
evidence:
  findings: << result.vulnerabilities | length >>
heuristic:
  metric: findings
  bands:
    - { min: 1, score: 4 }
    - { score: 2 }
  reasoning: << findings >> findings
prompt: prompt.md
YAML
    python3 - "$suite" <<'PY'
import json, sys
suite = sys.argv[1]
rubric = "\n".join(f"{i}. A rule of the rubric the grader applies to every repository alike, "
                    f"spelled out so the judge reads it the same way each time." for i in range(1, 61))
open(f"{suite}/prompt.md", "w").write(
    f"You grade one repository's vulnerability scan.\n\n{rubric}\n<< cache_break >>\n"
    "Findings in this repository: << evidence.findings >>\n\n<< response_format >>\n")
for n in range(100):
    vulns = [{"id": f"CVE-2026-{n:04d}{k}", "severity": "HIGH"} for k in range(n)]
    json.dump({"vulnerabilities": vulns}, open(f"{suite}/outputs/repo-{n:03d}.json", "w"))
PY
}

# One run in a fresh scratch project and a fresh mock; prints the figures.
measure() {
    local label=$1 cache_mode=$2 suite=$3
    shift 3
    local root="$work/$label"
    mkdir -p "$root/judges.d" "$root/prompts" "$root/ground-truth"
    if [[ $suite == trivy ]]; then
        cp -r judges.d/trivy "$root/judges.d/"
        cp -r prompts/trivy "$root/prompts/"
        cp -r ground-truth/trivy "$root/ground-truth/"
    else
        per_repo_project "$root"
    fi
    printf '\nprompt_cache: %s\n' "$cache_mode" >>"$root/judges.d/$suite/suite.yaml"
    rm -f "$work/port"
    python3 "$MOCK" --port 0 --port-file "$work/port" --latency-ms "$LATENCY_MS" --full-usage \
        --batch-delay-s 1 --max-lifetime-s 600 >"$work/summary-$label.json" 2>"$work/mock.err" &
    mock_pid=$!
    for _ in $(seq 200); do [[ -s $work/port ]] && break; sleep 0.05; done
    local start end
    start=$(date +%s.%N)
    (cd "$root" && ANTHROPIC_API_KEY=bench ANTHROPIC_BASE_URL="http://127.0.0.1:$(cat "$work/port")" \
        "$OLDPWD/$bin" run "judges.d/$suite" --cache-dir "$root/cache" \
        --out "$root/result.json" "$@" >/dev/null 2>"$root/stderr") || true
    end=$(date +%s.%N)
    kill -TERM "$mock_pid"
    wait "$mock_pid" 2>/dev/null || true
    python3 - "$work/summary-$label.json" "$label" "$(python3 -c "print(round($end - $start, 2))")" <<'EOF'
import json, sys
path, label, wall = sys.argv[1:]
summary = json.loads(open(path).read().strip().splitlines()[-1])
IN, OUT = 2.0, 10.0
list_in = list_out = paid_in = paid_out = 0.0
for api, t in summary["tokens_by_api"].items():
    batch = 0.5 if api.endswith("batch") else 1.0
    tokens_in = t["input_tokens"] + t["cache_read_input_tokens"] + t["cache_creation_input_tokens"]
    list_in += tokens_in * IN / 1e6
    list_out += t["output_tokens"] * OUT / 1e6
    paid_in += batch * (t["input_tokens"] * IN + t["cache_read_input_tokens"] * IN * 0.1
                        + t["cache_creation_input_tokens"] * IN * 1.25) / 1e6
    paid_out += batch * t["output_tokens"] * OUT / 1e6
print(f"{label:<14} requests {summary['requests']:>3}  wall {wall:>6} s  "
      f"input ${paid_in:.4f} of ${list_in:.4f} list ({paid_in / list_in:.2f}x)  "
      f"output ${paid_out:.4f} of ${list_out:.4f} ({paid_out / list_out:.2f}x)  "
      f"whole ${paid_in + paid_out:.4f} ({(paid_in + paid_out) / (list_in + list_out):.2f}x)")
EOF
}

if [[ -n ${ONLY:-} ]]; then
    # shellcheck disable=SC2086
    measure $ONLY
    echo "kept in $work"
    exit 0
fi
echo "== trivy, --repeat $REPEAT"
measure no-caching off trivy --repeat "$REPEAT"
measure caching auto trivy --repeat "$REPEAT"
measure caching+batch auto trivy --repeat "$REPEAT" --batch
echo "== a per-repo judge over 100 repos, its rubric above << cache_break >>"
measure per-repo-off off per-repo
measure per-repo auto per-repo
measure per-repo+batch auto per-repo --batch
