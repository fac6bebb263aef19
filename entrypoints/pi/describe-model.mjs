// One model as pi-squad reads it (docs/flows.md, "The model roster"): the one description both
// the shim (`index.ts`, which Pi loads) and `model-registry.mjs` (which node runs headless)
// write, so the bridge's `sessionModels` and the registry's list never differ in shape.
// Plain JavaScript: node runs the registry script without any TypeScript loader.

function finite(value) {
	return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/**
 * @param {{provider: unknown, id: unknown, reasoning?: unknown, cost?: Record<string, unknown>,
 *          thinkingLevelMap?: unknown, contextWindow?: unknown}} model
 * @returns {{provider: string, id: string, reasoning: boolean,
 *            cost: {input: number | null, output: number | null, cacheRead: number | null,
 *                   cacheWrite: number | null},
 *            thinkingLevelMap: unknown, contextWindow: number | null}}
 */
export function describeModel(model) {
	const cost = model.cost ?? {};
	return {
		provider: String(model.provider),
		id: String(model.id),
		reasoning: model.reasoning === true,
		cost: {
			input: finite(cost.input),
			output: finite(cost.output),
			cacheRead: finite(cost.cacheRead),
			cacheWrite: finite(cost.cacheWrite),
		},
		thinkingLevelMap: model.thinkingLevelMap ?? null,
		contextWindow: finite(model.contextWindow),
	};
}
