#!/bin/sh
# Packages one built caldera binary as a release archive with its checksum file.
# The release workflow calls it for every target of its matrix, and
# scripts/release-local.sh and the integration tests call it the same way, so what
# install.sh verifies locally is what a release ships.
#
#   scripts/package.sh TARGET BINARY OUT_DIR
#
# TARGET is a Rust target triple (x86_64-unknown-linux-gnu, aarch64-apple-darwin,
# x86_64-pc-windows-msvc, ...); BINARY the built `caldera` (or `caldera.exe`).
# Writes OUT_DIR/caldera-TARGET.tar.gz (a .zip for Windows targets) holding
# caldera-TARGET/caldera[.exe] and README.md, and beside it
# OUT_DIR/caldera-TARGET.tar.gz.sha256 in `sha256sum` format: "<hex>  <archive name>".
# The archive name carries no version, so `releases/latest/download/<name>` always
# names the newest release's archive.
set -eu

if [ "$#" -ne 3 ]; then
  echo "usage: scripts/package.sh TARGET BINARY OUT_DIR" >&2
  exit 2
fi
target=$1
binary=$2
out_dir=$3
root=$(cd "$(dirname "$0")/.." && pwd)

if [ ! -f "$binary" ]; then
  echo "package.sh: no binary at $binary (build it first: cargo build --release --locked --target $target)" >&2
  exit 2
fi

case "$target" in
  *windows*) ext=zip exe=.exe ;;
  *) ext=tar.gz exe= ;;
esac
name="caldera-$target"
archive="$name.$ext"

mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/$name"
cp "$binary" "$stage/$name/caldera$exe"
chmod 755 "$stage/$name/caldera$exe"
cp "$root/README.md" "$stage/$name/README.md"

rm -f "$out_dir/$archive" "$out_dir/$archive.sha256"
if [ "$ext" = zip ]; then
  # 7-Zip is on the Windows runners; zip elsewhere.
  if command -v 7z >/dev/null 2>&1; then
    (cd "$stage" && 7z a -tzip -bso0 -bsp0 "$out_dir/$archive" "$name" >/dev/null)
  else
    (cd "$stage" && zip -q -r "$out_dir/$archive" "$name")
  fi
else
  (cd "$stage" && tar -czf "$out_dir/$archive" "$name")
fi

# sha256sum on Linux and Git Bash, shasum on macOS: both print "<hex>  <file>".
if command -v sha256sum >/dev/null 2>&1; then
  (cd "$out_dir" && sha256sum "$archive" >"$archive.sha256")
else
  (cd "$out_dir" && shasum -a 256 "$archive" >"$archive.sha256")
fi
echo "$out_dir/$archive"
