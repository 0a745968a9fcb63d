# N shards of a suite on one machine, N processes at a time, then one merge.
# SUITE: the suite folder; N: the number of shards; RUN_FLAGS: flags of `caldera run`
# (e.g. `--heuristic`, or `--cache-dir DIR` shared by the shards in LLM mode).
# The merge prints the run's table and exits as a single `caldera run` would.
SUITE=${SUITE:-judges.d/trivy} N=${N:-4}
mkdir -p parts && seq 1 "$N" | xargs -P "$N" -I{} caldera run "$SUITE" $RUN_FLAGS --shard {}/"$N" --out parts/{}.json && caldera merge parts/*.json --out merged.json
