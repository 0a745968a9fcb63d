#!/usr/bin/env bash
# Streaming and sharding at scale (not a test; CI does not run it). Generates GB (default
# 10) gigabytes of synthetic trivy scans with benches/shards/generate.py (fixed seed;
# 2.5-3.5 MB per repo, about 330 repos per GB) and runs the suite of benches/shards/
# (per-repo records, judges that only total them, and one `scope: repo` judge) with the
# release binary, each under `/usr/bin/time -v`:
#
#   (a) in-memory baseline: BASE_BIN (default: BIN) with CALDERA_NO_STREAM=1 on the
#       first tenth of the repos;
#   (b) one streaming run over everything: peak RSS must stay below 1 GB and time per MB
#       must be no worse than 1.1x (a); (a) and (b) are each the median of three runs;
#   (c) the same input in SHARDS shards (default 4) run one after another with
#       `caldera run --shard K/N`, then `caldera merge`: each step's time and peak RSS.
#
# It checks that the merge gives the single run's scores and decision, prints a Markdown
# table, and deletes the generated data on exit. Exit 1 when a bound of (b) is broken.
#
#   benches/shards.sh [--gb G] [--base-gb G] [--shards N] [--dir DIR]
#
# BIN=path/to/caldera measures another build; BASE_BIN=path/to/caldera measures (a) with
# another build, e.g. one from before streaming. --dir DIR puts the data under DIR
# (default: a fresh folder under target/bench/); it needs G + 5 GB free. Memory: a run
# that does not stream holds about 2x its input, so choose a --gb that fits when the
# build measured does not stream (and shard 1 reads every document for the data check).
set -euo pipefail
cd "$(dirname "$0")/.."

gb=10 base_gb="" shards=4 parent=target/bench
while [[ $# -gt 0 ]]; do
    case $1 in
    --gb) gb=$2; shift 2 ;;
    --base-gb) base_gb=$2; shift 2 ;;
    --shards) shards=$2; shift 2 ;;
    --dir) parent=$2; shift 2 ;;
    *) echo "usage: $0 [--gb G] [--base-gb G] [--shards N] [--dir DIR]" >&2; exit 2 ;;
    esac
done
base_gb=${base_gb:-$(python3 -c "print($gb / 10)")}
if [[ ! -x /usr/bin/time ]]; then
    echo "needs GNU time at /usr/bin/time (Debian: apt-get install time)" >&2
    exit 2
fi

if [[ -z ${BIN:-} ]]; then
    cargo build --quiet --release --locked
    BIN=${CARGO_TARGET_DIR:-target}/release/caldera
fi
BIN=$(realpath "$BIN")
BASE_BIN=$(realpath "${BASE_BIN:-$BIN}")

mkdir -p "$parent"
free_kb=$(df -Pk "$parent" | awk 'NR == 2 { print $4 }')
need_kb=$(python3 -c "print(int(($gb + 5) * 1e6))")
if (( free_kb < need_kb )); then
    echo "$parent has $((free_kb / 1000000)) GB free; --gb $gb needs $((need_kb / 1000000)) GB (use a smaller --gb)" >&2
    exit 2
fi
work=$(mktemp -d "$parent/shards.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "generating $gb GB into $work" >&2
python3 benches/shards/generate.py "$work/all" "$gb" >&2
# The baseline input is the first repos of the same data (each repo is generated from
# its own seed), hard-linked: no second copy on disk.
mkdir -p "$work/base/outputs" "$work/base/expected"
base_bytes=$(python3 -c "print(int($base_gb * 1e9))")
total=0
for f in "$work"/all/outputs/*.json; do
    name=$(basename "$f")
    ln "$f" "$work/base/outputs/$name"
    ln "$work/all/expected/$name" "$work/base/expected/$name"
    total=$((total + $(stat -c %s "$f") + $(stat -c %s "$work/all/expected/$name")))
    ((total < base_bytes)) || break
done
mb() { du -sbL "$@" | awk '{ s += $1 } END { printf "%.0f", s / 1e6 }'; }
all_mb=$(mb "$work/all/outputs" "$work/all/expected")
base_mb=$(mb "$work/base/outputs" "$work/base/expected")
all_repos=$(find "$work/all/outputs" -name "*.json" | wc -l)
base_repos=$(find "$work/base/outputs" -name "*.json" | wc -l)

rows=()
# measure NAME INPUT_MB COMMAND...: runs the command REPEAT times (default 1) under
# /usr/bin/time -v and adds a table row: the median wall and CPU time, both per MB of
# input, and the highest peak RSS. Exit 0 and 1 are judgements; any other status stops
# the benchmark.
measure() {
    local name=$1 input_mb=$2
    shift 2
    local status=0 i samples=()
    for ((i = 0; i < ${REPEAT:-1}; i++)); do
        /usr/bin/time -v -o "$work/time" "$@" >"$work/out" 2>"$work/err" || status=$?
        if ((status > 1)); then
            echo "$name: exit $status" >&2
            cat "$work/err" >&2
            exit 2
        fi
        samples+=("$(awk -F': ' '
            /Elapsed \(wall clock\)/ { n = split($2, p, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + p[i] }
            /User time/ { c += $2 } /System time/ { c += $2 }
            /Maximum resident set size/ { r = $2 }
            END { printf "%.2f %.2f %.0f\n", w, c, r / 1024 }' "$work/time")")
    done
    read -r wall cpu rss < <(printf '%s\n' "${samples[@]}" | python3 -c '
import statistics, sys
runs = [list(map(float, line.split())) for line in sys.stdin]
print(f"{statistics.median(r[0] for r in runs):.2f} {statistics.median(r[1] for r in runs):.2f} {max(r[2] for r in runs):.0f}")')
    local row
    row=$(python3 - "$name" "$input_mb" "$wall" "$cpu" "$rss" <<'PY'
import sys
name, mb, wall, cpu, rss = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
per = lambda s: f"{s * 1000 / mb:.2f} ms" if mb else "-"
size = f"{mb:,.0f} MB" if mb else "-"
print(f"| {name} | {size} | {wall:.2f} s | {per(wall)} | {cpu:.2f} s | {per(cpu)} | {rss} MB |")
PY
)
    rows+=("$row")
    echo "$row" >&2
    last=("$wall" "$cpu" "$rss")
}
suite=benches/shards
# Read every file once, as after the scanner wrote them (the page cache holds the input
# when memory allows; otherwise every run reads from disk alike).
cat "$work"/all/outputs/*.json "$work"/all/expected/*.json >/dev/null

# (a) and (b) are the bound's two sides: each is run three times, the median kept (a
# run's time varies by a few tenths of a second on a busy machine).
# (a) reads its input whole, as every run did before streaming (CALDERA_NO_STREAM=1).
REPEAT=3 measure "(a) in-memory, $base_repos repos" "$base_mb" env CALDERA_NO_STREAM=1 "$BASE_BIN" run "$suite" --heuristic --quiet \
    --results "$work/base/outputs" --ground-truth "$work/base/expected" --out "$work/base.json"
base=("${last[@]}")
REPEAT=3 measure "(b) streaming, $all_repos repos" "$all_mb" "$BIN" run "$suite" --heuristic --quiet \
    --results "$work/all/outputs" --ground-truth "$work/all/expected" --out "$work/single.json"
stream=("${last[@]}")
mkdir "$work/parts"
for k in $(seq 1 "$shards"); do
    measure "(c) shard $k/$shards" 0 "$BIN" run "$suite" --heuristic --quiet --shard "$k/$shards" \
        --results "$work/all/outputs" --ground-truth "$work/all/expected" --out "$work/parts/$k.json"
done
measure "(c) merge of $shards" 0 "$BIN" merge "$work"/parts/*.json --out "$work/merged.json"

echo
echo "| run | input | wall | wall per MB | CPU | CPU per MB | peak RSS |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
# The bounds of (b), and the merge against the single run.
python3 - "$all_mb" "$base_mb" "${base[@]}" "${stream[@]}" "$work/single.json" "$work/merged.json" <<'PY'
import json, sys
all_mb, base_mb = float(sys.argv[1]), float(sys.argv[2])
bw, bc, _ = map(float, sys.argv[3:6])
sw, sc, srss = map(float, sys.argv[6:9])
single, merged = (json.load(open(p)) for p in sys.argv[9:11])
ok = True
def check(cond, text):
    global ok
    ok &= cond
    print(("ok: " if cond else "FAILED: ") + text)
check(srss < 1024, f"(b) peak RSS {srss:.0f} MB < 1024 MB")
for what, b, s in (("wall", bw, sw), ("CPU", bc, sc)):
    ratio = (s / all_mb) / (b / base_mb)
    check(ratio <= 1.1, f"(b) {what} per MB is {ratio:.2f}x (a) (bound 1.1x)")
scores = lambda r: [(d["dimension"], d.get("score")) for d in r["dimensions"]]
check(scores(single) == scores(merged) and single.get("decision") == merged.get("decision"),
      f"merge gives the single run's scores and decision ({single.get('decision')})")
sys.exit(0 if ok else 1)
PY
