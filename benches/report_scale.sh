#!/usr/bin/env bash
# Reports and comparisons of large or hostile results (not a test): wall time and peak
# RSS of the release binary on
#   1. `report --format html` of a result whose panel has RATERS (3000) raters (the
#      pairwise-kappa heatmap);
#   2. `diff` of two results with one `scope: repo` dimension of REPOS (20000, then
#      300000) per-repo verdicts;
#   3. `report --format table` of a result of about RESULT_MB (100) MB (memory per byte
#      of result);
#   4. `calibrate` of the trivy suite against labels from LABEL_RATERS (2000) raters.
# Each case prints `case: seconds, max RSS in MB, exit status`.
# BIN=path/to/caldera measures another build (e.g. an older one, for before/after).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z ${BIN:-} ]]; then
    cargo build --quiet --release
    BIN=${CARGO_TARGET_DIR:-target}/release/caldera
fi
BIN=$(realpath "$BIN")
LIMIT_S=${LIMIT_S:-300}
LIMIT_MB=${LIMIT_MB:-6144}
RATERS=${RATERS:-3000}
RESULT_MB=${RESULT_MB:-100}
LABEL_RATERS=${LABEL_RATERS:-2000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

measure() { # name, command...
    local name=$1
    shift
    local status=0
    (ulimit -v $((LIMIT_MB * 1024)); timeout "$LIMIT_S" /usr/bin/time -f '%e %M' -o "$work/time" "$@") \
        >"$work/out" 2>"$work/err" || status=$?
    if [[ $status == 124 ]]; then
        echo "$name: not done after ${LIMIT_S} s"
        return
    fi
    local secs=? kb=0
    read -r secs kb < <(grep -E '^[0-9.]+ [0-9]+$' "$work/time") || true
    local why
    why=$(grep -m1 -oE 'memory allocation of [0-9]+ bytes failed' "$work/err" || true)
    echo "$name: ${secs} s, $((kb / 1024)) MB, exit ${status}${why:+ ($why)}"
}

# A real result to build on.
"$BIN" run judges.d/trivy --heuristic --quiet --out "$work/base.json" >/dev/null

# 1. A panel of RATERS raters, no pairs: about 85 KB for 3000.
python3 - "$work/base.json" "$work/panel.json" "$RATERS" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
raters = [f"model-{i:05d}" for i in range(int(sys.argv[3]))]
doc["panel"] = {"models": raters, "items": 9, "agreement": {"n_items": 9, "raters": raters}}
json.dump(doc, open(sys.argv[2], "w"))
PY
echo "panel result: $(($(stat -c %s "$work/panel.json") / 1024)) KB"
measure "html of a $RATERS-rater panel" "$BIN" report "$work/panel.json" --format html --out "$work/panel.html"

# 2. Two runs with one per-repo dimension of N verdicts each, scores moved a little.
per_repo() { # n, out, shift
    python3 - "$work/base.json" "$2" "$1" "$3" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
n, shift = int(sys.argv[3]), int(sys.argv[4])
d = doc["dimensions"][0]
d["repos"] = [{"repo": f"repo-{i:07d}", "status": "scored", "score": 1 + (i + shift) % 5,
               "confidence": 0.8, "reasoning": "r", "evidence": {"found": i % 7}}
              for i in range(n)]
doc["summary"]["problems"] = [{"kind": "input", "message": f"repo {i} has no truth"}
                              for i in range(0, n, 10)]
json.dump(doc, open(sys.argv[2], "w"))
PY
}
for n in 20000 300000; do
    per_repo "$n" "$work/a.json" 0
    per_repo "$n" "$work/b.json" 1
    measure "diff of $n per-repo verdicts" "$BIN" diff "$work/a.json" "$work/b.json" --format json --out "$work/diff.json"
done

# 3. A large result: per-repo verdicts with evidence until about RESULT_MB MB.
python3 - "$work/base.json" "$work/large.json" "$RESULT_MB" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
target = int(sys.argv[3]) << 20
repo = lambda i: {"repo": f"repo-{i:07d}", "status": "scored", "score": 3, "confidence": 0.8,
                  "reasoning": "a reason of some length " * 4,
                  "evidence": {"found": i, "missed": [f"CVE-2024-{j:05d}" for j in range(8)],
                               "by_severity": {"critical": 1, "high": 2, "medium": 3}}}
size = len(json.dumps(repo(0)))
doc["dimensions"][0]["repos"] = [repo(i) for i in range(target // size)]
json.dump(doc, open(sys.argv[2], "w"))
PY
echo "large result: $(($(stat -c %s "$work/large.json") >> 20)) MB"
measure "table of a $RESULT_MB MB result" "$BIN" report "$work/large.json" --format table --out "$work/large.txt"

# 4. Labels of LABEL_RATERS raters, each scoring every sample repo on one dimension.
python3 - "$work/labels.csv" "$LABEL_RATERS" <<'PY'
import sys
repos = ["clean-flask-api", "clean-service", "critical-cves", "dev-deps-fp", "ghsa-aliases",
         "iac-platform", "mixed-severity", "outdated-polyglot", "sbom-monorepo"]
with open(sys.argv[1], "w") as f:
    f.write("unit,dimension,score,rater\n")
    for r in range(int(sys.argv[2])):
        for i, repo in enumerate(repos):
            f.write(f"{repo},vulnerability_accuracy,{1 + (i * 7 + r) % 5},rater-{r:05d}\n")
PY
measure "calibrate with $LABEL_RATERS raters" "$BIN" calibrate judges.d/trivy --labels "$work/labels.csv" --format json
