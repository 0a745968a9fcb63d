#!/usr/bin/env bash
# Startup of the release binary (not a test): the median over RUNS fresh processes of
#   1. exec -> first model request: `caldera run judges.d/trivy` against a loopback
#      HTTP server started here, timed from just before the exec to the arrival of the
#      first request (one clock: the launcher and the server are one Python process);
#      the run is stopped once that request has arrived;
#   2. `caldera validate judges.d/trivy`, exec to exit: every judge loaded and checked,
#      then evaluated on the suite's own inputs; and with `--no-data`, loading and
#      checking alone;
#   3. `caldera --version`, exec to exit (the floor: process start and argument parsing).
# BIN=path skips the build and times that binary instead.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-30}
if [[ -z ${BIN:-} ]]; then
    cargo build --quiet --release
    BIN=${CARGO_TARGET_DIR:-target}/release/caldera
fi
"$BIN" validate judges.d/trivy >/dev/null 2>&1 || true   # warm the page cache
python3 - "$BIN" "$RUNS" <<'PY'
import http.server, os, socket, statistics, subprocess, sys, tempfile, threading, time

binary, runs = sys.argv[1], int(sys.argv[2])
arrived = threading.Event()
stamp = [0.0]
current = ["none"]  # each run sends its own key: late requests of a stopped run are ignored

class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        if self.headers.get("x-api-key") == current[0] and not arrived.is_set():
            stamp[0] = time.perf_counter()
            arrived.set()
        self.send_response(503)
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
base = f"http://127.0.0.1:{server.server_address[1]}"
out = tempfile.mkdtemp()
count = [0]

def first_request():
    count[0] += 1
    current[0] = f"bench-{count[0]}"
    env = dict(os.environ, ANTHROPIC_API_KEY=current[0], ANTHROPIC_BASE_URL=base)
    arrived.clear()
    t = time.perf_counter()
    p = subprocess.Popen([binary, "run", "judges.d/trivy", "--cache", "off", "--json",
                          "--out", os.path.join(out, "r.json")],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ok = arrived.wait(10)
    p.kill(); p.wait()
    if not ok:
        sys.exit("no request arrived within 10 s")
    return (stamp[0] - t) * 1000

def to_exit(*args):
    t = time.perf_counter()
    subprocess.run([binary, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1000

def report(name, f):
    times = [f() for _ in range(runs)]
    print(f"{name}: median {statistics.median(times):.1f} ms, "
          f"min {min(times):.1f} ms, max {max(times):.1f} ms over {runs} runs")

report("exec -> first model request (http)", first_request)
report("caldera validate judges.d/trivy", lambda: to_exit("validate", "judges.d/trivy"))
report("caldera validate --no-data judges.d/trivy",
       lambda: to_exit("validate", "--no-data", "judges.d/trivy"))
report("caldera --version", lambda: to_exit("--version"))
PY
