#!/bin/sh
# The action's install step: a released binary through scripts/install.sh (checksum
# verified), or a build from the action's own source when no binary is available for
# this platform or version (install.sh exit 4) or when `version: source` asks for it.
# A checksum mismatch (exit 1) is never papered over by a build: the step fails.
#
# Environment: CALDERA_VERSION (`latest`, a tag, or `source`), CALDERA_REPO (the
# action's repository, owner/name), CALDERA_INSTALL_DIR, GITHUB_ACTION_PATH (the
# action's checkout), GITHUB_OUTPUT (receives `bin=<path of caldera>`).
set -eu

action_root=${GITHUB_ACTION_PATH:-$(cd "$(dirname "$0")/../.." && pwd)}
install_dir=${CALDERA_INSTALL_DIR:?CALDERA_INSTALL_DIR is not set}
version=${CALDERA_VERSION:-latest}
case "$(uname -s)" in
  MINGW* | MSYS* | CYGWIN* | Windows_NT) exe=.exe ;;
  *) exe= ;;
esac

build_from_source() {
  echo "building caldera from $action_root (cargo install --locked)" >&2
  command -v cargo >/dev/null 2>&1 || {
    echo "::error::no caldera binary for this platform and no cargo to build one" >&2
    exit 2
  }
  # --root puts the binary in <root>/bin; the install folder is that bin.
  cargo install --locked --quiet --path "$action_root" --root "$(dirname "$install_dir")"
}

if [ "$version" = source ] || [ -z "${CALDERA_REPO:-}" ]; then
  # `uses: ./` (a local checkout) has no repository to download releases from.
  build_from_source
else
  status=0
  CALDERA_VERSION=$version CALDERA_INSTALL_DIR=$install_dir sh "$action_root/scripts/install.sh" || status=$?
  case "$status" in
    0) ;;
    4)
      echo "::warning::no released caldera $version for this platform; building from source instead"
      build_from_source
      ;;
    *) exit "$status" ;;
  esac
fi

"$install_dir/caldera$exe" --version
echo "bin=$install_dir/caldera$exe" >>"${GITHUB_OUTPUT:-/dev/null}"
