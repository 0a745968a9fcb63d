#!/usr/bin/env bash
# Resource bounds under hostile inputs (not a test): wall time and peak RSS of the
# release binary on
#   1. judge templates that loop, fan out or build huge strings, by filters or by `~`
#      (evaluation bounds);
#   2. a suite.yaml of about 650 KB (YAML loading must stay linear);
#   3. model replies of 1 MB of unclosed braces and of 100 MB (reply scan and cap),
#      served by a fake `claude` program on PATH.
# Each case prints `case: seconds, max RSS in MB, exit status`.
# BIN=path/to/caldera measures another build (e.g. an older one, for before/after).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z ${BIN:-} ]]; then
    cargo build --quiet --release
    BIN=${CARGO_TARGET_DIR:-target}/release/caldera
fi
BIN=$(realpath "$BIN")
LIMIT_S=${LIMIT_S:-120}
# Address-space cap per case, so an unbounded case fails here instead of taking the
# machine's memory (the before-figures of the join case hit it).
LIMIT_MB=${LIMIT_MB:-4096}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

measure() { # name, command...
    local name=$1
    shift
    local status=0
    (ulimit -v $((LIMIT_MB * 1024)); timeout "$LIMIT_S" /usr/bin/time -f '%e %M' -o "$work/time" "$@") \
        >"$work/out" 2>"$work/err" || status=$?
    if [[ $status == 124 ]]; then
        echo "$name: killed after ${LIMIT_S} s"
        return
    fi
    local secs=? kb=0
    read -r secs kb < <(grep -E '^[0-9.]+ [0-9]+$' "$work/time") || true
    local why
    why=$(grep -m1 -oE 'memory allocation of [0-9]+ bytes failed|error\[[a-z-]+\]: .{0,80}' "$work/err" || true)
    echo "$name: ${secs} s, $((kb / 1024)) MB, exit ${status}${why:+ ($why)}"
}

suite() { # dir, judge body
    mkdir -p "$1/data"
    echo '{"id": "r1", "n": 1}' >"$1/data/r1.json"
    printf 'suite: hostile\ninputs: { results: data }\n' >"$1/suite.yaml"
    printf 'dimension: d\nweight: 1\n%s\n' "$2" >"$1/judge.yaml"
}

# 1. Evaluation bounds.
suite "$work/loops" "evidence:
  spin: \"<% for i in range(100000) %><% for j in range(100000) %><% endfor %><% endfor %>x\"
heuristic: { metric: spin, bands: [{ score: 3 }], reasoning: r }"
measure "nested range(100000) loops" "$BIN" run "$work/loops" --heuristic --out "$work/o.json"
suite "$work/fanout" "evidence:
  fan: \"<% macro f(n) %><% if n > 0 %><< f(n - 1) >><< f(n - 1) >><% else %>ab<% endif %><% endmacro %><< f(40) >>\"
heuristic: { metric: fan, bands: [{ score: 3 }], reasoning: r }"
measure "macro fan-out 2^40" "$BIN" run "$work/fanout" --heuristic --out "$work/o.json"
suite "$work/join" "evidence:
  big: \"<< (['x' * 1000000] * 20000) | join >>\"
heuristic: { metric: big, bands: [{ score: 3 }], reasoning: r }"
measure "join of a 20 GB repeat" "$BIN" run "$work/join" --heuristic --out "$work/o.json"
suite "$work/concat" "evidence:
  big: \"<% set a = 'ab' %>$(printf '<%% set a = a ~ a %%>%.0s' {1..40})<< a | length >>\"
heuristic: { metric: big, bands: [{ score: 3 }], reasoning: r }"
measure "forty doublings by ~ (2 TB)" "$BIN" run "$work/concat" --heuristic --out "$work/o.json"

# 2. A 650 KB suite.yaml (23,000 model aliases).
mkdir -p "$work/bigyaml"
suite "$work/bigyaml" "heuristic: { metric: n, bands: [{ score: 3 }], reasoning: r }
evidence: { n: 1 }"
python3 - "$work/bigyaml/suite.yaml" <<'PY'
import sys
with open(sys.argv[1], "a") as f:
    f.write("model_aliases:\n")
    for i in range(23000):
        f.write(f"  alias_{i:06d}: model-{i:06d}\n")
PY
echo "   ($(($(wc -c <"$work/bigyaml/suite.yaml") / 1024)) KB suite.yaml)"
measure "validate a 650 KB suite.yaml" "$BIN" validate "$work/bigyaml"

# 3. Replies: a fake `claude` prints a file as its reply.
mkdir -p "$work/bin"
cat >"$work/bin/claude" <<SH
#!/bin/sh
cat >/dev/null
exec cat "$work/reply"
SH
chmod +x "$work/bin/claude"
suite "$work/llm" "evidence: { n: 1 }
heuristic: { metric: n, bands: [{ score: 3 }], reasoning: r }
prompt: prompt.md"
echo 'Judge << evidence >>' >"$work/llm/prompt.md"
reply_case() { # name, python expression writing the reply
    python3 -c "import sys; open(sys.argv[1], 'w').write($2)" "$work/reply"
    measure "$1" env PATH="$work/bin:$PATH" ANTHROPIC_API_KEY= OPENAI_API_KEY= \
        "$BIN" run "$work/llm" --provider claude-cli --cache off --timeout 600 \
        --out "$work/o.json" --log "$work/log.jsonl"
}
reply_case "reply: 160 KB of unclosed braces" "'{a' * 80000"
reply_case "reply: 1 MB of unclosed braces" "'{a' * 500000"
reply_case "reply: 100 MB" "'{\"score\": 3, \"reasoning\": \"' + 'x' * 100000000 + '\"}'"
