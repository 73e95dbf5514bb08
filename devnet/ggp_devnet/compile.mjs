// Compiles devnet/ggp_devnet/contracts/**/*.sol with the pinned solc-js and writes artifacts.json.
//   node devnet/ggp_devnet/compile.mjs          write artifacts.json
//   node devnet/ggp_devnet/compile.mjs --check  exit 1 if artifacts.json is stale
// Exit codes: 0 ok, 1 stale artifacts (--check), 2 compile errors.
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, writeFileSync, existsSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const solc = require("solc");

const HERE = dirname(fileURLToPath(import.meta.url));
const CONTRACTS_DIR = join(HERE, "contracts");
const ARTIFACTS = join(HERE, "artifacts.json");
const EVM_VERSION = "cancun";
const OPTIMIZER_RUNS = 200;

function listSolFiles(dir) {
	const out = [];
	for (const entry of readdirSync(dir, { withFileTypes: true })) {
		const full = join(dir, entry.name);
		if (entry.isDirectory()) out.push(...listSolFiles(full));
		else if (entry.isFile() && entry.name.endsWith(".sol")) out.push(full);
	}
	return out;
}

// Source unit names are POSIX paths relative to publisher/devnet ("contracts/Base.sol"), so
// relative imports resolve inside the standard-JSON input and the hash is machine independent.
function loadSources() {
	const files = listSolFiles(CONTRACTS_DIR).map((full) => ({
		path: relative(HERE, full).split(sep).join("/"),
		content: readFileSync(full, "utf8"),
	}));
	// Byte-wise ordering (not locale-aware) keeps the hash stable everywhere.
	files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
	return files;
}

function sourcesHash(files) {
	const h = createHash("sha256");
	for (const f of files) {
		h.update(f.path, "utf8");
		h.update("\0");
		h.update(f.content, "utf8");
	}
	return h.digest("hex");
}

function compile(files) {
	const input = {
		language: "Solidity",
		sources: Object.fromEntries(files.map((f) => [f.path, { content: f.content }])),
		settings: {
			optimizer: { enabled: true, runs: OPTIMIZER_RUNS },
			evmVersion: EVM_VERSION,
			// No metadata hash or CBOR trailer: bytecode depends only on the sources and settings.
			metadata: { bytecodeHash: "none", appendCBOR: false },
			outputSelection: {
				"*": {
					"": ["ast"],
					"*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"],
				},
			},
		},
	};
	const output = JSON.parse(solc.compile(JSON.stringify(input)));
	const diagnostics = output.errors ?? [];
	const errors = diagnostics.filter((d) => d.severity === "error");
	for (const d of diagnostics.filter((d) => d.severity !== "error")) {
		process.stderr.write(d.formattedMessage ?? `${d.severity}: ${d.message}\n`);
	}
	if (errors.length > 0) {
		for (const d of errors) process.stderr.write(d.formattedMessage ?? `${d.type}: ${d.message}\n`);
		process.exit(2);
	}
	return output;
}

// Only concrete contracts are deployable; abstract bases, interfaces and libraries are skipped.
function deployableNames(ast) {
	const names = new Set();
	for (const node of ast.nodes ?? []) {
		if (node.nodeType === "ContractDefinition" && node.contractKind === "contract" && !node.abstract) {
			names.add(node.name);
		}
	}
	return names;
}

function buildArtifacts(files, output) {
	const contracts = {};
	for (const f of files) {
		const deployable = deployableNames(output.sources[f.path].ast);
		for (const [name, c] of Object.entries(output.contracts[f.path] ?? {})) {
			if (!deployable.has(name) || !c.evm.bytecode.object) continue;
			if (contracts[name]) {
				process.stderr.write(`duplicate contract name ${name} (${f.path})\n`);
				process.exit(2);
			}
			contracts[name] = {
				abi: c.abi,
				bytecode: "0x" + c.evm.bytecode.object,
				deployedBytecode: "0x" + c.evm.deployedBytecode.object,
			};
		}
	}
	return {
		compiler: { solc: solc.version(), evmVersion: EVM_VERSION, optimizerRuns: OPTIMIZER_RUNS },
		sources_sha256: sourcesHash(files),
		contracts,
	};
}

function sortKeys(value) {
	if (Array.isArray(value)) return value.map(sortKeys);
	if (value && typeof value === "object") {
		const out = {};
		for (const k of Object.keys(value).sort()) out[k] = sortKeys(value[k]);
		return out;
	}
	return value;
}

function serialize(artifacts) {
	return JSON.stringify(sortKeys(artifacts), null, 2) + "\n";
}

function main() {
	const check = process.argv.includes("--check");
	const files = loadSources();
	if (files.length === 0) {
		process.stderr.write(`no .sol files under ${CONTRACTS_DIR}\n`);
		process.exit(2);
	}
	const current = check && existsSync(ARTIFACTS) ? readFileSync(ARTIFACTS, "utf8") : null;
	// Sources that differ from the ones the artifacts name are stale without compiling; the same
	// sources are compiled and compared in full, so hand-edited artifacts are found too.
	if (check && (current === null || JSON.parse(current).sources_sha256 !== sourcesHash(files))) {
		console.error("artifacts.json is out of date with contracts/*.sol; run npm run compile");
		process.exit(1);
	}
	const text = serialize(buildArtifacts(files, compile(files)));

	if (check) {
		if (current !== text) {
			console.error("artifacts.json is out of date with contracts/*.sol; run npm run compile");
			process.exit(1);
		}
		console.log("artifacts up to date");
		return;
	}
	writeFileSync(ARTIFACTS, text);
	const count = Object.keys(JSON.parse(text).contracts).length;
	console.log(`wrote ${relative(process.cwd(), ARTIFACTS) || ARTIFACTS} (${count} contracts)`);
}

main();
