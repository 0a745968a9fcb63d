#!/usr/bin/env bash
# A new machine's wait (not a test): clones the repository's HEAD into a temporary
# folder and, with an empty target folder, times the README's two commands in order:
#   1. clone -> first result: `cargo run -- run judges.d/trivy --heuristic`
#   2. then the tests: `cargo test` (clone -> green tests is the sum)
#   3. with INSTALL=1, then `cargo install --locked --path .` (the optimised binary)
# Crates already in the local registry cache are not downloaded again; on a machine
# without them, add the download (about 60 MB). The machine may be shared: the figures
# say what the build cost here and then, with `uptime` before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone --quiet --no-hardlinks . "$work/caldera"
cd "$work/caldera"
export CARGO_TARGET_DIR="$work/target"
echo "load before: $(uptime)"
step() {
    local id=$1 label=$2; shift 2
    local start end
    start=$(date +%s.%N)
    "$@" >"$work/$id.log" 2>&1 || { echo "$label failed:"; tail -20 "$work/$id.log"; exit 1; }
    end=$(date +%s.%N)
    python3 -c "s = $end - $start; print(f'$label: {int(s // 60)} min {s % 60:.0f} s')"
}
step run "clone -> first result (cargo run -- run judges.d/trivy --heuristic)" \
    cargo run --locked -- run judges.d/trivy --heuristic
step test "then cargo test" cargo test --locked
grep -E "^test result" "$work/test.log" | tail -3
if [[ ${INSTALL:-0} == 1 ]]; then
    step install "then cargo install --locked --path ." \
        cargo install --locked --path . --root "$work/bin"
    ls -l "$work/bin/bin/caldera" | awk '{print "installed binary:", $5 / 1e6, "MB"}'
fi
echo "load after: $(uptime)"
