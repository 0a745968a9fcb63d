// Drives yaml-language-server over stdio the way VS Code does with this repository's
// .vscode/settings.json alone (its `yaml.schemas` mapping and `yaml.yamlVersion`; the
// files' modelines are blanked out first, so the settings must do the mapping), opens
// every bundled YAML file, and reports per file the schema the server applied, its
// diagnostics, and any top-level completion that would insert something broken
// (`[object Object]`, a malformed choice).
//
// Usage (the server is not a dependency of caldera: install it in a scratch folder):
//   npm install --prefix /tmp/yamlls yaml-language-server@1.25
//   NODE_PATH=/tmp/yamlls/node_modules node scripts/yamlls-check.mjs [FILE...]
// Exit status 0 when every file got the schema the loader reads it with and no
// diagnostic, 1 otherwise.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const modules = path.resolve(process.env.NODE_PATH || "node_modules");
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const settings = JSON.parse(fs.readFileSync(path.join(root, ".vscode/settings.json"), "utf8"));
const yamlSettings = {
  schemas: settings["yaml.schemas"],
  yamlVersion: settings["yaml.yamlVersion"] || "1.2",
  validate: true,
  hover: true,
  completion: true,
  schemaStore: { enable: false },
};

function yamlFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return yamlFiles(p);
    return /\.ya?ml$/.test(e.name) ? [p] : [];
  });
}

/** The schema the loader reads a bundled file with (as tests/integration/schema.rs says). */
function expectedSchema(rel) {
  const name = path.basename(rel);
  const inCase = rel.split(path.sep).includes("cases");
  if (name === "suite.yaml") return "suite";
  if (inCase && name === "case.yaml") return "case";
  if (inCase && name === "expect.yaml") return "expect";
  return "judge";
}

const server = spawn(
  process.execPath,
  [path.join(modules, "yaml-language-server/bin/yaml-language-server"), "--stdio"],
  { stdio: ["pipe", "pipe", "inherit"] },
);
let buffer = Buffer.alloc(0);
let nextId = 1;
const pending = new Map();
const diagnostics = new Map();
let lastDiagnostic = Date.now();

function send(message) {
  const body = Buffer.from(JSON.stringify({ jsonrpc: "2.0", ...message }));
  server.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
  server.stdin.write(body);
}
function request(method, params) {
  const id = nextId++;
  send({ id, method, params });
  return new Promise((resolve) => pending.set(id, resolve));
}
function onMessage(msg) {
  if (msg.id !== undefined && pending.has(msg.id) && msg.method === undefined) {
    pending.get(msg.id)(msg.result ?? msg.error);
    pending.delete(msg.id);
  } else if (msg.method === "workspace/configuration") {
    const result = msg.params.items.map((i) => (i.section === "yaml" ? yamlSettings : {}));
    send({ id: msg.id, result });
  } else if (msg.method === "textDocument/publishDiagnostics") {
    diagnostics.set(msg.params.uri, msg.params.diagnostics);
    lastDiagnostic = Date.now();
  } else if (msg.id !== undefined && msg.method) {
    send({ id: msg.id, result: null });
  }
}
server.stdout.on("data", (chunk) => {
  buffer = Buffer.concat([buffer, chunk]);
  for (;;) {
    const end = buffer.indexOf("\r\n\r\n");
    if (end < 0) return;
    const length = Number(/Content-Length: (\d+)/i.exec(buffer.subarray(0, end).toString())[1]);
    if (buffer.length < end + 4 + length) return;
    onMessage(JSON.parse(buffer.subarray(end + 4, end + 4 + length).toString()));
    buffer = buffer.subarray(end + 4 + length);
  }
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rootUri = pathToFileURL(root).href;
await request("initialize", {
  processId: process.pid,
  rootUri,
  workspaceFolders: [{ uri: rootUri, name: "caldera" }],
  capabilities: { workspace: { configuration: true }, textDocument: { publishDiagnostics: {} } },
  initializationOptions: {},
});
send({ method: "initialized", params: {} });
send({ method: "workspace/didChangeConfiguration", params: { settings: { yaml: yamlSettings } } });
await sleep(500);

const given = process.argv.slice(2).map((f) => path.resolve(f));
const files = given.length ? given : yamlFiles(path.join(root, "judges.d")).sort();
let problems = 0;
let total = 0;
for (const file of files) {
  const rel = path.relative(root, file);
  const uri = pathToFileURL(file).href;
  // Without its modeline (same length of lines: positions stay as in the file).
  // A blank last line, where completion is asked for the file's top-level keys.
  const text =
    fs
      .readFileSync(file, "utf8")
      .replace(/^#\s*yaml-language-server:.*$/m, (line) => "#".padEnd(line.length, " "))
      .replace(/\n?$/, "\n") + "\n";
  send({ method: "textDocument/didOpen", params: { textDocument: { uri, languageId: "yaml", version: 1, text } } });
  const schemas = (await request("yaml/get/jsonSchema", uri)) || [];
  const applied = schemas.map((s) => path.basename(s.uri || "").replace(".schema.json", ""));
  const deadline = Date.now() + 5000;
  while (!diagnostics.has(uri) && Date.now() < deadline) await sleep(20);
  await sleep(50);
  const found = [...(diagnostics.get(uri) || [])];
  // Completion inserts only what parses: no `[object Object]`, no choice of snippets.
  const lastLine = text.split("\n").length - 1;
  const completion = await request("textDocument/completion", {
    textDocument: { uri },
    position: { line: lastLine, character: 0 },
  });
  for (const item of completion?.items || completion || []) {
    const inserted = item.insertText || item.textEdit?.newText || "";
    if (/\[object Object\]|\$\{\d+\|[^}]*\$\{/.test(inserted)) {
      found.push({
        range: { start: { line: lastLine, character: 0 } },
        message: `completion of \`${item.label}\` inserts ${JSON.stringify(inserted)}`,
      });
    }
  }
  total += found.length;
  const wrongSchema = applied.join(",") !== expectedSchema(rel);
  if (found.length || wrongSchema) problems++;
  console.log(`${found.length}\t${applied.join(",") || "-"}\t${rel}${wrongSchema ? `\t(expected ${expectedSchema(rel)})` : ""}`);
  for (const d of found) console.log(`\t${d.range.start.line + 1}:${d.range.start.character + 1}\t${d.message}`);
  send({ method: "textDocument/didClose", params: { textDocument: { uri } } });
}
console.log(`${files.length} files, ${total} diagnostics, ${problems} files with a problem`);
server.kill();
process.exit(problems ? 1 : 0);
