#!/bin/sh
# The release of this machine's platform, end to end, without GitHub: builds caldera as
# the release workflow does (cargo build --release --locked --target HOST), packages it
# with the workflow's own scripts/package.sh, serves the archive from a temporary folder
# over loopback HTTP, and runs scripts/install.sh against it twice: as published (it must
# install, and `caldera --version` must work) and with one byte of the archive changed
# (it must refuse). Prints the build time and the archive size.
#
#   scripts/release-local.sh            # a release build (minutes on two cores)
#   CALDERA_RELEASE_BINARY=target/debug/caldera scripts/release-local.sh   # skip the build
#
# Needs cargo, python3 (the loopback server) and curl or wget. Leaves nothing behind but
# the build in target/.
set -eu
cd "$(dirname "$0")/.."

target=$(rustc -vV | sed -n 's/^host: //p')
work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -n "${CALDERA_RELEASE_BINARY:-}" ]; then
  binary=$CALDERA_RELEASE_BINARY
  echo "== using $binary (no build)"
else
  echo "== cargo build --release --locked --target $target"
  start=$(date +%s)
  cargo build --release --locked --target "$target"
  echo "build: $(($(date +%s) - start)) s"
  binary="target/$target/release/caldera"
fi

echo "== package"
sh scripts/package.sh "$target" "$binary" "$work/dist" >/dev/null
archive="caldera-$target.tar.gz"
echo "archive: $(wc -c <"$work/dist/$archive" | tr -d ' ') bytes, binary: $(wc -c <"$binary" | tr -d ' ') bytes"
cat "$work/dist/$archive.sha256"

echo "== serve over loopback"
port_file="$work/port"
python3 - "$work/dist" "$port_file" <<'EOF' &
import functools, http.server, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
with open(sys.argv[2], "w") as f:
    f.write(str(httpd.server_address[1]))
httpd.serve_forever()
EOF
server=$!
for _ in 1 2 3 4 5 6 7 8 9 10; do
  [ -s "$port_file" ] && break
  sleep 0.5
done
[ -s "$port_file" ] || { echo "the loopback server did not start" >&2; exit 1; }
url="http://127.0.0.1:$(cat "$port_file")"

echo "== install (as published)"
CALDERA_DOWNLOAD_URL=$url CALDERA_INSTALL_DIR="$work/good" sh scripts/install.sh
"$work/good/caldera" --version

echo "== install (tampered archive)"
printf 'x' >>"$work/dist/$archive"
status=0
CALDERA_DOWNLOAD_URL=$url CALDERA_INSTALL_DIR="$work/bad" sh scripts/install.sh || status=$?
if [ "$status" -ne 1 ] || [ -e "$work/bad/caldera" ]; then
  echo "FAILED: a tampered archive was not refused (exit $status)" >&2
  exit 1
fi
echo "refused as it should be (exit 1)"
echo "release-local: OK"
