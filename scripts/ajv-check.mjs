// Ajv 8, with its default options (strict mode), compiles every schema in schemas/ and
// validates every bundled YAML file against the schema .vscode/settings.json maps it to
// (read with the `yaml` package: YAML 1.2 core, as editors read it).
//
// Usage (Ajv is not a dependency of caldera: install it in a scratch folder):
//   npm install --prefix /tmp/ajvcheck ajv@8 ajv-formats yaml
//   NODE_PATH=/tmp/ajvcheck/node_modules node scripts/ajv-check.mjs
// Exit status 0 when every schema compiles and every file validates, 1 otherwise.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const require = createRequire(path.resolve(process.env.NODE_PATH || "node_modules", "x.js"));
const Ajv = require("ajv").default;
const YAML = require("yaml");

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
let failures = 0;

const validators = new Map();
for (const file of fs.readdirSync(path.join(root, "schemas")).sort()) {
  if (!file.endsWith(".schema.json")) continue;
  const schema = JSON.parse(fs.readFileSync(path.join(root, "schemas", file), "utf8"));
  try {
    // Default options; only the logger is ours, so strict-mode warnings count too.
    const warnings = [];
    const ajv = new Ajv({ logger: { log() {}, warn: (m) => warnings.push(m), error: (m) => warnings.push(m) } });
    validators.set(`./schemas/${file}`, ajv.compile(schema));
    failures += warnings.length;
    for (const w of warnings) console.log(`warning\t${file}\t${w}`);
    console.log(`compiled\t${file}`);
  } catch (e) {
    failures++;
    console.log(`refused\t${file}\t${e.message}`);
  }
}

/** Globs as the YAML language server reads them: `*` stays in one folder, `!` excludes. */
function matches(patterns, rel) {
  const re = (p) => new RegExp("^" + p.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*") + "$");
  const inc = patterns.filter((p) => !p.startsWith("!"));
  const exc = patterns.filter((p) => p.startsWith("!")).map((p) => p.slice(1));
  return inc.some((p) => re(p).test(rel)) && !exc.some((p) => re(p).test(rel));
}

function yamlFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return yamlFiles(p);
    return /\.ya?ml$/.test(e.name) ? [p] : [];
  });
}

const settings = JSON.parse(fs.readFileSync(path.join(root, ".vscode/settings.json"), "utf8"));
let files = 0;
for (const file of yamlFiles(path.join(root, "judges.d")).sort()) {
  const rel = path.relative(root, file);
  const schemas = Object.entries(settings["yaml.schemas"]).filter(([, p]) => matches(p, rel));
  for (const [schema] of schemas) {
    const validate = validators.get(schema);
    if (!validate) continue;
    files++;
    const doc = YAML.parse(fs.readFileSync(file, "utf8"), { version: "1.2" });
    if (!validate(doc)) {
      failures++;
      console.log(`invalid\t${rel}\t${JSON.stringify(validate.errors)}`);
    }
  }
}
console.log(`${validators.size} schemas compiled, ${files} bundled files validated, ${failures} problems`);
process.exit(failures ? 1 : 0);
