#!/usr/bin/env bash
# Mutation testing of the scoring core with cargo-mutants: every mutant of a group's files
# is built and that group's tests run against it; a mutant no test notices is "missed".
#
#   scripts/mutants.sh                 # every group (hours on two cores)
#   scripts/mutants.sh verdict score   # some groups (see ORDER below)
#   MUTANTS_IN_PLACE=1 scripts/mutants.sh verdict   # mutate this tree (reuses its target
#                                                   # dir; leave the tree alone meanwhile)
#   MUTANTS_ITERATE=1 scripts/mutants.sh verdict    # again, only what was missed last time
#
# scripts/mutants-equivalent.txt lists mutants that cannot change behaviour, one
# `REGEX  # reason` per line; they are not run.
#
# Needs `cargo install --locked cargo-mutants`. Not part of CI: one mutant costs one
# incremental build (about 15 s on two cores for the library tests alone).
# Results: target/mutants/<group>/mutants.out/{caught,missed,unviable,timeout}.txt and a
# per-file table printed at the end (also in target/mutants/summary.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

# group -> files (globs), the test targets built for each mutant (cargo arguments), the
# tests run (name filters, any of which selects a test; none: all) and, optionally, a
# regex the mutants' names must match (`--re`). Library unit tests pin the logic:
# building only them keeps a mutant at one compile of the crate.
declare -A FILES TARGETS FILTERS RE
FILES[score]='engine/score/aggregate.rs engine/score/round.rs engine/score/detection.rs engine/score/matcher.rs engine/score/matcher/*.rs engine/score/agreement/mod.rs engine/score/agreement/consensus.rs engine/score/agreement/panel.rs engine/score/agreement/scale.rs'
TARGETS[score]='--lib'
# The agreement statistics, pinned by published values: many mutants, slow to run.
FILES[stats]='engine/score/agreement/cohen.rs engine/score/agreement/alpha.rs engine/score/agreement/fleiss.rs engine/score/agreement/interpret.rs engine/score/bootstrap.rs'
TARGETS[stats]='--lib'
FILES[verdict]='engine/verdict/heuristic.rs engine/verdict/assertions.rs engine/verdict/combine.rs engine/verdict/decision.rs engine/verdict/gate.rs engine/run/result.rs'
TARGETS[verdict]='--lib'
FILES[reply]='engine/reply/*.rs'
TARGETS[reply]='--lib'
FILES[llm]='engine/llm/cache.rs engine/provider/retry.rs'
TARGETS[llm]='--lib'
# The exit decision only. (cargo-mutants 27 applies neither --re nor --exclude-re to
# "delete field" mutants: a struct literal with `..base` in run.rs would run too.)
FILES[exit]='engine/cli/run.rs'
TARGETS[exit]='--lib'
RE[exit]='exit_of|gate'
# The selectors, the bounded operators and every built-in of the evidence language
# (detection metrics, counts, statistics, matching, rounding, ranges, patterns...).
FILES[builtins]='engine/evidence/select.rs engine/evidence/operators.rs engine/evidence/builtins/*.rs'
TARGETS[builtins]='--lib'
# The evaluator: the interpreted and the fast path, the compiled plan, scopes and the
# bounds on time and memory.
FILES[evaluator]='engine/evidence/eval.rs engine/evidence/fastpath.rs engine/evidence/compiled.rs engine/evidence/plan.rs engine/evidence/scope.rs engine/evidence/limits.rs'
TARGETS[evaluator]='--lib'
# The loader's input reading: documents (JSON, YAML, JSONL), the lenient reader, patterns.
FILES[inputs]='engine/load/inputs.rs engine/load/documents.rs engine/load/lenient.rs engine/load/patterns.rs engine/load/skim.rs'
TARGETS[inputs]='--lib'
ORDER=(verdict reply score llm exit stats builtins evaluator inputs)

command -v cargo-mutants >/dev/null || {
    echo "cargo-mutants is not installed: cargo install --locked cargo-mutants" >&2
    exit 2
}
groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=("${ORDER[@]}")
mkdir -p target/mutants
for g in "${groups[@]}"; do
    [ -n "${FILES[$g]:-}" ] || { echo "unknown group '$g' (known: ${ORDER[*]})" >&2; exit 2; }
    args=(--no-shuffle --output "target/mutants/$g")
    for f in ${FILES[$g]}; do args+=(--file "$f"); done
    for t in ${TARGETS[$g]}; do args+=("--cargo-arg=$t"); done
    [ -n "${RE[$g]:-}" ] && args+=(--re "${RE[$g]}")
    [ -n "${MUTANTS_IN_PLACE:-}" ] && args+=(--in-place)
    # Mutants that cannot change behaviour, each with its reason, are not run.
    if [ -f scripts/mutants-equivalent.txt ]; then
        while IFS= read -r line; do
            re=${line%%  #*}
            re=${re%"${re##*[![:space:]]}"}
            [ -n "$re" ] && [ "${re:0:1}" != "#" ] && args+=(--exclude-re "$re")
        done <scripts/mutants-equivalent.txt
    fi
    # MUTANTS_ITERATE=1: only the mutants missed (or not yet run) in the previous run.
    [ -n "${MUTANTS_ITERATE:-}" ] && args+=(--iterate)
    echo "== $g: ${FILES[$g]}"
    # cargo-mutants exits 2 when some mutants are missed; the table below says which.
    filters=()
    [ -n "${FILTERS[$g]:-}" ] && read -r -a filters <<<"${FILTERS[$g]}"
    cargo mutants "${args[@]}" -- -- "${filters[@]}" || {
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
