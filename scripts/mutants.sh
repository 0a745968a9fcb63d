#!/usr/bin/env bash
# Mutation testing of the scoring core with cargo-mutants: every mutant of a group's files
# is built and that group's tests run against it; a mutant no test notices is "missed".
#
#   scripts/mutants.sh                 # every group (hours on two cores)
#   scripts/mutants.sh score verdict   # some groups
#   MUTANTS_IN_PLACE=1 scripts/mutants.sh run   # mutate this tree (reuses its target dir;
#                                               # leave the tree alone while it runs)
#
# Needs `cargo install --locked cargo-mutants`. Not part of CI: one mutant costs one
# incremental build (about 15 s on two cores for the library tests alone).
# Results: target/mutants/<group>/mutants.out/{caught,missed,unviable,timeout}.txt and a
# per-file table printed at the end (also in target/mutants/summary.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

# group -> files (globs) and the tests that guard them. Library unit tests where they pin
# the logic; the integration tests that drive the real binary where the logic is reached
# only through a run (exit codes, the gate, the cache).
declare -A FILES TESTS
FILES[score]='engine/score/**/*.rs'
TESTS[score]='--lib'
FILES[verdict]='engine/verdict/heuristic.rs engine/verdict/assertions.rs engine/verdict/reply.rs'
TESTS[verdict]='--lib'
FILES[run]='engine/run/result.rs engine/run/judge.rs'
TESTS[run]='--lib --test integration -- run:: verdict:: gates scoring_pins pipeline_pin trivy_suite'
FILES[llm]='engine/llm/cache.rs engine/provider/retry.rs'
TESTS[llm]='--lib --test integration -- llm:: provider:: llm_cache llm_http llm_rate_limit'
FILES[exit]='engine/main.rs engine/cli/mod.rs'
TESTS[exit]='--test integration -- gates cli'
ORDER=(score verdict run llm exit)

command -v cargo-mutants >/dev/null || {
    echo "cargo-mutants is not installed: cargo install --locked cargo-mutants" >&2
    exit 2
}
groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=("${ORDER[@]}")
mkdir -p target/mutants
for g in "${groups[@]}"; do
    [ -n "${FILES[$g]:-}" ] || { echo "unknown group '$g' (known: ${ORDER[*]})" >&2; exit 2; }
    args=(--no-shuffle --cap-lints=true --output "target/mutants/$g")
    for f in ${FILES[$g]}; do args+=(--file "$f"); done
    [ -n "${MUTANTS_IN_PLACE:-}" ] && args+=(--in-place)
    echo "== $g: ${FILES[$g]}"
    # cargo-mutants exits 2 when some mutants are missed; the table below says which.
    # shellcheck disable=SC2086
    cargo mutants "${args[@]}" -- ${TESTS[$g]} || {
        rc=$?
        [ $rc -eq 2 ] || [ $rc -eq 3 ] || exit $rc
    }
done

# Per file: caught / missed / timeout / unviable, and the share of viable mutants caught.
{
    printf '%-44s %7s %7s %7s %8s %7s\n' file caught missed timeout unviable caught%
    for g in "${ORDER[@]}"; do
        out="target/mutants/$g/mutants.out"
        [ -d "$out" ] || continue
        for kind in caught missed timeout unviable; do
            [ -f "$out/$kind.txt" ] && sed "s/^\([^:]*\):.*/\1 $kind/" "$out/$kind.txt"
        done
    done | awk '{files[$1] = 1; n[$1, $2]++} END {
        for (f in files) {
            c = n[f, "caught"] + 0; m = n[f, "missed"] + 0; t = n[f, "timeout"] + 0
            u = n[f, "unviable"] + 0; v = c + m + t
            printf "%-44s %7d %7d %7d %8d %6.1f%%\n", f, c, m, t, u, v ? 100 * (c + t) / v : 100
        }
    }' | sort
} | tee target/mutants/summary.txt
