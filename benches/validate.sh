#!/usr/bin/env bash
# Wall time of `caldera validate judges.d/trivy` (not a test): the median of N runs of
# the release binary, each a fresh process (load, parse, every semantic check).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-30}
cargo build --quiet --release
bin=${CARGO_TARGET_DIR:-target}/release/caldera
"$bin" validate judges.d/trivy >/dev/null 2>&1   # warm the page cache
python3 - "$bin" "$RUNS" <<'PY'
import statistics, subprocess, sys, time
binary, runs = sys.argv[1], int(sys.argv[2])
times = []
for _ in range(runs):
    t = time.perf_counter()
    subprocess.run([binary, "validate", "judges.d/trivy"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times.append((time.perf_counter() - t) * 1000)
print(f"caldera validate judges.d/trivy: median {statistics.median(times):.1f} ms, "
      f"min {min(times):.1f} ms, max {max(times):.1f} ms over {runs} runs")
PY
