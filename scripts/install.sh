#!/bin/sh
# Installs a released caldera binary: picks the archive for this platform, downloads it
# and its .sha256 file, verifies the checksum (and refuses on a mismatch), and copies
# `caldera` into the install folder.
#
#   curl -fsSL https://github.com/OWNER/caldera/releases/latest/download/install.sh | sh
#   sh scripts/install.sh                      # from a clone (set CALDERA_REPO)
#
# Environment:
#   CALDERA_VERSION       a release tag (v0.2.0) or `latest` (default)
#   CALDERA_INSTALL_DIR   where `caldera` goes (default ~/.local/bin)
#   CALDERA_REPO          the GitHub repository the releases belong to (owner/name); the
#                         copy published with a release has it filled in
#   CALDERA_DOWNLOAD_URL  a base URL (http://, https:// or file://) holding the archives
#                         and checksums directly: overrides CALDERA_REPO/CALDERA_VERSION,
#                         for mirrors and for testing against a local folder or server
#   CALDERA_TARGET        the Rust target triple to fetch, when detection is wrong
#
# Exit status: 0 installed; 1 verification failed (checksum mismatch, no tool to compute
# one, an archive without the binary): nothing is installed; 2 usage error; 4 no binary
# available (platform without a release archive, download failed), which the GitHub
# Action takes as its cue to build from source instead.
set -eu

# Filled in by the release workflow for the copy it publishes.
default_repo="__CALDERA_REPO__"

die() {
  status=$1
  shift
  echo "install.sh: $*" >&2
  exit "$status"
}

# The Rust target triple of this machine, as the release matrix names its archives.
detect_target() {
  os=$(uname -s)
  arch=$(uname -m)
  case "$arch" in
    x86_64 | amd64) arch=x86_64 ;;
    aarch64 | arm64) arch=aarch64 ;;
    *) die 4 "no release archive for the $arch processor; build from source: cargo install --locked --path ." ;;
  esac
  case "$os" in
    Linux) echo "$arch-unknown-linux-gnu" ;;
    Darwin) echo "$arch-apple-darwin" ;;
    MINGW* | MSYS* | CYGWIN* | Windows_NT)
      [ "$arch" = x86_64 ] || die 4 "no release archive for Windows on $arch"
      echo "x86_64-pc-windows-msvc"
      ;;
    *) die 4 "no release archive for $os; build from source: cargo install --locked --path ." ;;
  esac
}

# The folder URL the archives are read from.
base_url() {
  if [ -n "${CALDERA_DOWNLOAD_URL:-}" ]; then
    echo "${CALDERA_DOWNLOAD_URL%/}"
    return
  fi
  repo=${CALDERA_REPO:-$default_repo}
  case "$repo" in
    __*__ | "") die 2 "set CALDERA_REPO=owner/name (or CALDERA_DOWNLOAD_URL) to say where the releases are" ;;
    */*) ;;
    *) die 2 "CALDERA_REPO must read owner/name, not '$repo'" ;;
  esac
  version=${CALDERA_VERSION:-latest}
  if [ "$version" = latest ]; then
    echo "https://github.com/$repo/releases/latest/download"
  else
    echo "https://github.com/$repo/releases/download/$version"
  fi
}

# fetch URL FILE: a file:// URL is copied, anything else goes through curl or wget.
fetch() {
  case "$1" in
    file://*)
      cp "${1#file://}" "$2" 2>/dev/null || return 1
      ;;
    *)
      if command -v curl >/dev/null 2>&1; then
        curl --proto '=https,http' -fsSL --retry 2 -o "$2" "$1" || return 1
      elif command -v wget >/dev/null 2>&1; then
        wget -q -O "$2" "$1" || return 1
      else
        die 4 "neither curl nor wget is installed"
      fi
      ;;
  esac
}

# The SHA-256 of a file as lowercase hex, with whichever tool this system has.
sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d' ' -f1
  elif command -v openssl >/dev/null 2>&1; then
    openssl dgst -sha256 "$1" | sed 's/.*= *//'
  else
    die 1 "no sha256sum, shasum or openssl to verify the download with; refusing to install"
  fi
}

main() {
  target=${CALDERA_TARGET:-$(detect_target)}
  case "$target" in
    *windows*) archive="caldera-$target.zip" exe=.exe ;;
    *) archive="caldera-$target.tar.gz" exe= ;;
  esac
  base=$(base_url)
  install_dir=${CALDERA_INSTALL_DIR:-${HOME:?HOME is not set; set CALDERA_INSTALL_DIR}/.local/bin}

  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  echo "downloading $base/$archive" >&2
  fetch "$base/$archive" "$work/$archive" || die 4 "could not download $base/$archive"
  fetch "$base/$archive.sha256" "$work/$archive.sha256" ||
    die 4 "could not download $base/$archive.sha256 (the checksum is required)"

  expected=$(cut -d' ' -f1 <"$work/$archive.sha256" | tr 'A-F' 'a-f')
  case "$expected" in
    *[!0-9a-f]* | "") die 1 "$archive.sha256 holds no SHA-256 checksum; refusing to install" ;;
  esac
  [ "${#expected}" -eq 64 ] || die 1 "$archive.sha256 holds no SHA-256 checksum; refusing to install"
  actual=$(sha256_of "$work/$archive")
  if [ "$actual" != "$expected" ]; then
    die 1 "checksum mismatch for $archive: expected $expected, got $actual; refusing to install (the download is corrupt or was tampered with)"
  fi
  echo "checksum verified: $actual" >&2

  mkdir "$work/x"
  case "$archive" in
    *.zip) unzip -q "$work/$archive" -d "$work/x" ;;
    *) tar -xzf "$work/$archive" -C "$work/x" ;;
  esac
  binary="$work/x/caldera-$target/caldera$exe"
  [ -f "$binary" ] || die 1 "$archive holds no caldera-$target/caldera$exe"

  mkdir -p "$install_dir"
  # Copy beside the destination, then rename: a running caldera is never half-written.
  cp "$binary" "$install_dir/.caldera$exe.partial"
  chmod 755 "$install_dir/.caldera$exe.partial"
  mv -f "$install_dir/.caldera$exe.partial" "$install_dir/caldera$exe"
  echo "caldera installed to $install_dir/caldera$exe" >&2
  case ":${PATH:-}:" in
    *":$install_dir:"*) ;;
    *) echo "note: $install_dir is not on PATH" >&2 ;;
  esac
}

main "$@"
