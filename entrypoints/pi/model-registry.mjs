// The models this Pi install can run, as Pi itself resolves them: pi-squad's headless flows
// derive their model roster (docs/flows.md, "The model roster") from this list.
//
//   node model-registry.mjs <Pi package directory>
//
// Loads that Pi's own `ModelRuntime` (built-in providers, `models.json`, `auth.json` and the
// provider variables, under PI_CODING_AGENT_DIR like Pi does) with the network off, so it
// never fetches a catalogue or refreshes a token, and prints one JSON line:
//   {"models": [{provider, id, reasoning, cost: {input, output, cacheRead, cacheWrite},
//                thinkingLevelMap, contextWindow}, ...], "error": string | null}
// `models` holds only the models with configured auth (`getAvailable`): a model without it
// would fail every child it was given to. `error` is Pi's own complaint about models.json.
// A failure prints {"models": null, "error": ...} and exits 1.

import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describeModel } from "./describe-model.mjs";

function answer(document, code) {
	process.stdout.write(`${JSON.stringify(document)}\n`, () => process.exit(code));
}

try {
	const piDir = process.argv[2];
	if (!piDir) throw new Error("usage: model-registry.mjs <Pi package directory>");
	const pi = await import(pathToFileURL(join(piDir, "dist", "index.js")).href);
	const runtime = await pi.ModelRuntime.create({ allowModelNetwork: false });
	const available = await runtime.getAvailable();
	answer({ models: available.map(describeModel), error: runtime.getError() ?? null }, 0);
} catch (error) {
	answer({ models: null, error: error instanceof Error ? error.message : String(error) }, 1);
}
