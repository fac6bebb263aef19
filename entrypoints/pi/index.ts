// pi-squad's Pi extension: a thin shim over the Python bridge (docs/bridge.md).
//
// It holds no policy. At load it starts `pi-squad bridge --role main|child` (or the argv prefix
// in PI_SQUAD_BRIDGE, a JSON array, followed by `--role <role>`), asks `hello`, and installs
// exactly what the answer lists: tools whose `execute` forwards to Python (with the session's
// model, thinking level and available models where the answer asks), a `tool_call` guard,
// a `message_end` observer for tool results, a `context` wait before each model call (a spec
// child commits its deliveries), an admission before each model request leaves (a delegated
// worker: refused, the process stops), a `before_agent_start` prompt addition, the
// session lifecycle, slash commands and renderers of custom transcript entries (their text
// lines); in the main role a running tool's abort signal is forwarded as `cancel_tool`, and the
// session-switching events the answer lists as `navigation` (never awaited). In the
// child role every bridge failure (no process, exit, timeout, malformed or refused reply)
// blocks the tool call or fails the tool; nothing is ever allowed on failure. In the main role
// (the user's own Pi) a bridge that cannot start takes away only pi-squad's own tools: the
// user's tools keep working and Pi shows the error with its remedy at session_start.
//
// Which bridge: PI_SQUAD_BRIDGE when set; else the `pi-squad` console script of the Python
// environment this file was installed into (a wheel's site-packages, or a checkout's .venv), so
// that Pi finds the bridge without pi-squad on its PATH; else `pi-squad` from PATH.
//
// Pi awaits an async factory before it starts the session, so the tools exist before any
// prompt and a `--tools` allowlist sees them. Pi's own JSON-lines framing rules apply here too:
// records are split on "\n" only (node:readline also splits on U+2028/U+2029).

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
// The model description `model-registry.mjs` prints too: one module, plain JavaScript.
import { describeModel } from "./describe-model.mjs";

// Only the type: the module itself is loaded in the main role alone (see `piSquad`).
type Tui = typeof import("@earendil-works/pi-tui");

const PROTOCOL_VERSION = 1;
const FAILURE = "pi-squad bridge failure: ";
const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_START_TIMEOUT_MS = 30_000;
const DEFAULT_MAIN_EXECUTE_TIMEOUT_MS = 900_000;
const STDERR_TAIL_BYTES = 4096;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

interface ToolSpec {
	name: string;
	label: string;
	description: string;
	parameters: JsonObject;
	/** Each execution carries the session's models (`sessionModels`): the flow tool's tiers. */
	sessionModels: boolean;
}

interface CommandSpec {
	name: string;
	description: string;
	sessionModels: boolean;
}

interface Registrations {
	tools: ToolSpec[];
	commands: CommandSpec[];
	entryRenderers: string[];
	navigation: string[];
	guard: boolean;
	messageEnd: boolean;
	context: boolean;
	/** Await each model request's admission (a delegated worker): refused, the process stops. */
	providerRequest: boolean;
	bootstrap: boolean;
	lifecycle: boolean;
}

type ToolParameters = Parameters<ExtensionAPI["registerTool"]>[0]["parameters"];

interface Hello {
	role: string;
	registrations: Registrations;
}

interface Pending {
	method: string;
	resolve: (result: Json) => void;
	reject: (error: Error) => void;
	timer: ReturnType<typeof setTimeout>;
}

/** An `ok:false` answer: the message is Python's, shown as is for a failed tool. */
class BridgeRefusal extends Error {
	constructor(
		readonly code: string,
		message: string,
	) {
		super(message);
	}
}

function isObject(value: unknown): value is JsonObject {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

function errorText(error: unknown): string {
	return error instanceof Error ? error.message : String(error);
}

function positiveInt(text: string | undefined, fallback: number): number {
	const value = Number(text);
	return text !== undefined && Number.isInteger(value) && value > 0 ? value : fallback;
}

const debug = process.env.PI_SQUAD_BRIDGE_DEBUG === "1";

/** Diagnostics go to stderr, except onto a terminal (Pi's TUI) unless debugging. */
function log(message: string): void {
	if (debug || !process.stderr.isTTY) {
		process.stderr.write(`pi-squad extension: ${message}\n`);
	}
}

/** Where the bridge's argv came from: it decides the remedy a failure names. */
type BridgeSource = "PI_SQUAD_BRIDGE" | "install" | "PATH";

interface BridgeCommand {
	argv: string[];
	source: BridgeSource;
}

/**
 * The `pi-squad` console script installed beside this file, if any. A wheel puts this file at
 * `<prefix>/lib/pythonX.Y/site-packages/entrypoints/pi/` (POSIX) or
 * `<prefix>/Lib/site-packages/entrypoints/pi/` (Windows), with the script in `<prefix>/bin/` or
 * `<prefix>/Scripts/`; a checkout keeps it at `<repo>/entrypoints/pi/` with `<repo>/.venv/`.
 * A console script, not `python -m`: `-m` would put the user's working directory first on
 * `sys.path`, where a project's own `domain/` or `entrypoints/` package would shadow ours.
 */
function installedBridge(): string | null {
	let here: string;
	try {
		here = dirname(fileURLToPath(import.meta.url));
	} catch {
		return null;
	}
	const packages = resolve(here, "..", "..");
	const prefixes =
		basename(packages).toLowerCase() === "site-packages"
			? [resolve(packages, "..", "..", ".."), resolve(packages, "..", "..")]
			: [join(packages, ".venv")];
	for (const prefix of prefixes) {
		for (const script of [join(prefix, "bin", "pi-squad"), join(prefix, "Scripts", "pi-squad.exe")]) {
			if (existsSync(script)) return script;
		}
	}
	return null;
}

function bridgeCommand(role: "main" | "child"): BridgeCommand {
	const configured = process.env.PI_SQUAD_BRIDGE;
	if (configured !== undefined && configured !== "") {
		let parsed: unknown;
		try {
			parsed = JSON.parse(configured);
		} catch {
			parsed = null;
		}
		if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((a) => typeof a === "string")) {
			throw new Error("PI_SQUAD_BRIDGE must be a JSON array of strings (an argv prefix)");
		}
		return { argv: [...(parsed as string[]), "--role", role], source: "PI_SQUAD_BRIDGE" };
	}
	const installed = installedBridge();
	if (installed !== null) return { argv: [installed, "bridge", "--role", role], source: "install" };
	return { argv: ["pi-squad", "bridge", "--role", role], source: "PATH" };
}

/** What to type when the main role's bridge cannot start, by where its argv came from. */
function remedy(source: BridgeSource): string {
	switch (source) {
		case "PI_SQUAD_BRIDGE":
			return (
				"PI_SQUAD_BRIDGE is set in this Pi's environment and does not start a working bridge: " +
				"correct it (a JSON array, e.g. [\"/path/to/pi-squad\", \"bridge\"]) or unset it, then run `pi-squad doctor`"
			);
		case "install":
			return (
				"the pi-squad installed beside this extension does not start: reinstall it " +
				"(`uv tool install --force pi-squad`, or `uv sync` in a checkout), then run `pi-squad doctor`"
			);
		case "PATH":
			return (
				"no pi-squad was found beside this extension or on PATH: install it " +
				"(`uv tool install pi-squad`, or `uv sync` in a checkout) or set " +
				"PI_SQUAD_BRIDGE='[\"/path/to/pi-squad\", \"bridge\"]', then run `pi-squad doctor`"
			);
	}
}

class Bridge {
	private readonly child: ChildProcess;
	private readonly pending = new Map<number, Pending>();
	private nextId = 1;
	private buffered: Buffer[] = [];
	private failure: string | null = null;
	private stderrTail = "";
	private readonly decoder = new TextDecoder("utf-8", { fatal: true });

	constructor(
		argv: string[],
		private readonly onEvent: (event: string, data: JsonObject) => void,
	) {
		this.child = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "pipe"], env: process.env });
		// The bridge must never keep Pi alive: it ends on its own when its stdin closes.
		this.child.unref();
		for (const stream of [this.child.stdin, this.child.stdout, this.child.stderr]) {
			(stream as unknown as { unref?: () => void } | null)?.unref?.();
		}
		this.child.on("error", (error) => this.fail(`cannot run ${JSON.stringify(argv)}: ${error.message}`));
		// "close", not "exit": every answer the bridge wrote has been read by then.
		this.child.on("close", (code, signal) => {
			const how = signal !== null ? `signal ${signal}` : `status ${code}`;
			const tail = this.stderrTail.trim();
			this.fail(`bridge exited with ${how}${tail ? `: ${tail}` : ""}`);
		});
		this.child.stdin?.on("error", (error) => this.fail(`bridge input closed: ${error.message}`));
		this.child.stdout?.on("error", (error) => this.fail(`bridge output failed: ${error.message}`));
		this.child.stdout?.on("data", (chunk: Buffer) => this.receive(chunk));
		this.child.stderr?.on("data", (chunk: Buffer) => {
			const text = chunk.toString("utf8");
			this.stderrTail = (this.stderrTail + text).slice(-STDERR_TAIL_BYTES);
			if (debug || !process.stderr.isTTY) process.stderr.write(text);
		});
		this.child.stderr?.on("error", () => undefined);
	}

	/** One request; resolves with `result`, rejects on `ok:false`, timeout or a dead bridge. */
	request(method: string, params: JsonObject, timeoutMs: number): Promise<Json> {
		if (this.failure !== null) return Promise.reject(new Error(this.failure));
		const id = this.nextId++;
		return new Promise<Json>((resolve, reject) => {
			const timer = setTimeout(() => {
				this.pending.delete(id);
				reject(new Error(`no answer to ${method} within ${timeoutMs} ms`));
			}, timeoutMs);
			this.pending.set(id, { method, resolve, reject, timer });
			const line = `${JSON.stringify({ v: PROTOCOL_VERSION, id, method, params })}\n`;
			try {
				this.child.stdin?.write(line);
			} catch (error) {
				this.fail(`cannot write to the bridge: ${errorText(error)}`);
			}
		});
	}

	/** End the bridge's input: it answers what is in flight, then exits. */
	close(): void {
		if (this.failure === null) this.failure = "bridge closed";
		try {
			this.child.stdin?.end();
		} catch {
			// already gone
		}
	}

	private fail(reason: string): void {
		if (this.failure === null || this.failure === "bridge closed") this.failure = reason;
		for (const [id, pending] of this.pending) {
			clearTimeout(pending.timer);
			this.pending.delete(id);
			pending.reject(new Error(`${pending.method}: ${reason}`));
		}
	}

	private receive(chunk: Buffer): void {
		let start = 0;
		let newline = chunk.indexOf(0x0a);
		while (newline !== -1) {
			this.buffered.push(chunk.subarray(start, newline));
			const line = Buffer.concat(this.buffered);
			this.buffered = [];
			this.handleLine(line);
			start = newline + 1;
			newline = chunk.indexOf(0x0a, start);
		}
		if (start < chunk.length) this.buffered.push(chunk.subarray(start));
	}

	private handleLine(raw: Buffer): void {
		let message: unknown;
		try {
			const text = this.decoder.decode(raw.length > 0 && raw[raw.length - 1] === 0x0d ? raw.subarray(0, -1) : raw);
			if (text.trim() === "") return;
			message = JSON.parse(text);
		} catch (error) {
			return this.malformed(`not a UTF-8 JSON line (${errorText(error)})`);
		}
		if (!isObject(message) || message.v !== PROTOCOL_VERSION) {
			return this.malformed("not a protocol version 1 object");
		}
		if (typeof message.event === "string") {
			try {
				this.onEvent(message.event, isObject(message.data) ? message.data : {});
			} catch (error) {
				log(`event ${message.event} failed: ${errorText(error)}`);
			}
			return;
		}
		if (typeof message.id !== "number" || typeof message.ok !== "boolean") {
			return this.malformed("a reply without a numeric id and a boolean ok");
		}
		const pending = this.pending.get(message.id);
		if (pending === undefined) return; // answered after its timeout: already blocked
		this.pending.delete(message.id);
		clearTimeout(pending.timer);
		if (message.ok) {
			pending.resolve(message.result === undefined ? null : message.result);
			return;
		}
		const error = isObject(message.error) ? message.error : {};
		const code = typeof error.code === "string" ? error.code : "unknown";
		const text = typeof error.message === "string" ? error.message : "refused without a message";
		pending.reject(new BridgeRefusal(code, text));
	}

	/** A bridge that writes garbage cannot be trusted with anything that follows. */
	private malformed(what: string): void {
		const reason = `malformed bridge output: ${what}`;
		log(reason);
		this.fail(reason);
		this.close();
		this.child.kill();
	}
}

function parseHello(result: Json): Hello {
	if (!isObject(result) || typeof result.role !== "string" || !isObject(result.registrations)) {
		throw new Error("malformed hello reply");
	}
	const r = result.registrations;
	const flags = ["guard", "messageEnd", "bootstrap", "lifecycle"] as const;
	if (!Array.isArray(r.tools) || !flags.every((flag) => typeof r[flag] === "boolean")) {
		throw new Error("malformed hello registrations");
	}
	const tools = r.tools.map((tool): ToolSpec => {
		if (
			!isObject(tool) ||
			typeof tool.name !== "string" ||
			typeof tool.label !== "string" ||
			typeof tool.description !== "string" ||
			!isObject(tool.parameters)
		) {
			throw new Error("malformed tool in hello registrations");
		}
		return {
			name: tool.name,
			label: tool.label,
			description: tool.description,
			parameters: tool.parameters,
			sessionModels: tool.sessionModels === true,
		};
	});
	// `commands` is optional: a bridge that lists none registers none.
	const listed = r.commands === undefined ? [] : r.commands;
	if (!Array.isArray(listed)) throw new Error("malformed commands in hello registrations");
	const commands = listed.map((command): CommandSpec => {
		if (!isObject(command) || typeof command.name !== "string" || typeof command.description !== "string") {
			throw new Error("malformed command in hello registrations");
		}
		return { name: command.name, description: command.description, sessionModels: command.sessionModels === true };
	});
	// `entryRenderers` is optional too: the custom entry types whose `data.lines` are drawn.
	const renderers = r.entryRenderers === undefined ? [] : r.entryRenderers;
	if (!Array.isArray(renderers) || !renderers.every((name) => typeof name === "string")) {
		throw new Error("malformed entryRenderers in hello registrations");
	}
	// `navigation` is optional: the Pi session events to forward (docs/delegation.md).
	const navigation = r.navigation === undefined ? [] : r.navigation;
	if (!Array.isArray(navigation) || !navigation.every((name) => typeof name === "string")) {
		throw new Error("malformed navigation in hello registrations");
	}
	// `context` is optional: only a spec child awaits Pi's `context` event.
	if (r.context !== undefined && typeof r.context !== "boolean") {
		throw new Error("malformed context in hello registrations");
	}
	// `providerRequest` is optional: only a delegated worker admits its model requests.
	if (r.providerRequest !== undefined && typeof r.providerRequest !== "boolean") {
		throw new Error("malformed providerRequest in hello registrations");
	}
	return {
		role: result.role,
		registrations: {
			tools,
			commands,
			entryRenderers: renderers as string[],
			navigation: navigation as string[],
			guard: r.guard as boolean,
			messageEnd: r.messageEnd as boolean,
			context: r.context === true,
			providerRequest: r.providerRequest === true,
			bootstrap: r.bootstrap as boolean,
			lifecycle: r.lifecycle as boolean,
		},
	};
}

type UiContext = Pick<ExtensionContext["ui"], "notify" | "setStatus" | "setWidget">;
/** A running tool's row: Pi shows the latest partial result until the tool returns. */
type ToolUpdate = (partial: { content: { type: "text"; text: string }[]; details: JsonObject }) => void;

/**
 * One `ui` instruction from the bridge (docs/bridge.md): `notify` {text, level}, `setStatus`
 * {key, text|null} or `setWidget` {key, lines|null}. Text only: the bridge never sends spec
 * content, and a malformed instruction is dropped, never half-drawn.
 */
function showOnUi(ui: UiContext, data: JsonObject): void {
	try {
		if (data.method === "notify" && typeof data.text === "string") {
			const level = data.level === "warning" || data.level === "error" ? data.level : "info";
			// Said as Pi exits: the terminal keeps it once the UI is gone (written first: a UI
			// that is already closing may refuse the notification).
			if (data.stderr === true) process.stderr.write(`${data.text}\n`);
			ui.notify(data.text, level);
		} else if (data.method === "setStatus" && typeof data.key === "string") {
			ui.setStatus(data.key, typeof data.text === "string" ? data.text : undefined);
		} else if (data.method === "setWidget" && typeof data.key === "string") {
			const lines = Array.isArray(data.lines) && data.lines.every((l) => typeof l === "string") ? (data.lines as string[]) : undefined;
			ui.setWidget(data.key, lines);
		} else {
			log(`ignored ui instruction ${JSON.stringify(data.method)}`);
		}
	} catch (error) {
		log(`ui ${String(data.method)} failed: ${errorText(error)}`); // a stale UI after a session switch
	}
}

type Theme = Parameters<Parameters<ExtensionAPI["registerEntryRenderer"]>[1]>[2];

/**
 * A custom transcript entry drawn from its `data.lines` (Python wrote them; nothing here decides
 * what they say): the first line bold, a run that succeeded (✓) or failed (✗) in its colour.
 * Pi calls this when the entry is appended and again whenever the session is rendered anew
 * (a resumed session), from the entry stored in the session file.
 */
function renderLines(tui: Tui, customType: string, data: unknown, theme: Theme): InstanceType<Tui["Box"]> {
	const lines =
		isObject(data) && Array.isArray(data.lines) && data.lines.every((line) => typeof line === "string")
			? (data.lines as string[])
			: [`${customType}: an entry this version cannot draw`];
	const styled = lines.map((line, index) => {
		if (index === 0) return theme.bold(line);
		const mark = line.trimStart()[0];
		if (mark === "✓") return theme.fg("success", line);
		if (mark === "✗") return theme.fg("error", line);
		return theme.fg("muted", line);
	});
	const box = new tui.Box(1, 1, (text: string) => theme.bg("customMessageBg", text));
	box.addChild(new tui.Text(styled.join("\n"), 0, 0));
	return box;
}

/**
 * Which Pi session this is: the main role records its session file as the owner of the squads
 * it drives (docs/bridge.md). Absent when Pi keeps no session file (`--no-session`).
 */
function sessionIdentity(ctx: ExtensionContext): JsonObject {
	const identity: JsonObject = {};
	try {
		const file = ctx.sessionManager.getSessionFile();
		if (typeof file === "string" && file !== "") identity.sessionFile = file;
		const id = ctx.sessionManager.getSessionId();
		if (typeof id === "string" && id !== "") identity.sessionId = id;
	} catch (error) {
		log(`session identity: ${errorText(error)}`);
	}
	return identity;
}

/**
 * The session's models, for a tool or command registered with `sessionModels` (docs/bridge.md):
 * its model, its thinking level and the models its registry can run (those with auth), so a
 * flow's tiers are this session's. Never throws: whatever cannot be read goes as `null` (with
 * the registry's failure as `error`), and the call proceeds without it.
 */
function describeSession(pi: ExtensionAPI, ctx: ExtensionContext): JsonObject {
	const models: JsonObject = { model: null, thinking: null, available: null };
	try {
		const model = ctx.model;
		if (model !== undefined) models.model = { provider: String(model.provider), id: String(model.id) };
		models.thinking = pi.getThinkingLevel();
	} catch (error) {
		log(`session model: ${errorText(error)}`);
	}
	try {
		models.available = ctx.modelRegistry.getAvailable().map((model) => describeModel(model) as JsonObject);
	} catch (error) {
		models.error = errorText(error);
	}
	return models;
}

/** Child role: whatever Pi asks, the answer is "blocked": the bridge could not say otherwise. */
function blockEverything(pi: ExtensionAPI, reason: string): void {
	log(reason);
	pi.on("tool_call", async () => ({ block: true, reason: FAILURE + reason }));
	// A delegated worker's every model request must be admitted by its bridge; with no bridge,
	// none is, so the worker stops before its first request leaves.
	if (process.env.PI_SQUAD_DELEGATION_WORKER === "1") {
		pi.on("before_provider_request", async () => {
			log("provider_request: no bridge admits the model request; stopping");
			return stopNow();
		});
	}
}

/**
 * Ends this process with SIGKILL, which nothing in it can catch or delay. The promise never
 * settles: a `before_provider_request` handler that awaits it never returns, so Pi never sends
 * the payload even if the signal landed late (Pi only logs an error a handler throws and sends
 * the request anyway, so a refusal cannot be a throw).
 */
function stopNow(): Promise<never> {
	process.kill(process.pid, "SIGKILL");
	return new Promise<never>(() => {});
}

/** The slash commands the main role's bridge registers when it runs (docs/bridge.md). */
const MAIN_COMMANDS = ["squad", "flows", "delegate"];

/**
 * Main role: pi-squad's tools are simply absent; the user's own tools are untouched. The error
 * and its remedy go on screen when the session starts (stderr when Pi has no UI). Its slash
 * commands stay registered and answer with the same error: typed while the bridge is broken,
 * `/squad` would otherwise be sent to the model as a prompt.
 */
function reportUnavailable(pi: ExtensionAPI, reason: string, source: BridgeSource): void {
	const message = `pi-squad is unavailable in this session (${reason}). Your own tools work as usual. Fix: ${remedy(source)}.`;
	log(message);
	const show = (ctx: ExtensionContext): void => {
		if (ctx.hasUI) {
			ctx.ui.notify(message, "error");
		} else if (process.stderr.isTTY && !debug) {
			process.stderr.write(`${message}\n`);
		}
	};
	pi.on("session_start", async (_event, ctx) => show(ctx));
	for (const name of MAIN_COMMANDS) {
		pi.registerCommand(name, {
			description: "pi-squad (unavailable in this session: it answers with the reason)",
			handler: async (_args: string, ctx: ExtensionContext) => show(ctx),
		});
	}
}

// -- The squad inspect overlay (`/squad inspect [TASK]`, `/squad watch`, alt+i; docs/bridge.md) --
// Python writes every line of it (an `inspect` ui instruction: one page per task); this only
// draws the selected page, moves between pages with the keyboard and asks again once a second
// while it is open. It is never awaited and never holds the editor: Tab hands the keys back to
// the editor while the overlay stays on screen (alt+i takes them again), Esc closes it.

const INSPECT_METHOD = "inspect";
const INSPECT_SHORTCUT = "alt+i";
const INSPECT_REFRESH_MS = 1000;

interface InspectPage {
	key: string;
	title: string;
	lines: string[];
}

/** The pages of an `inspect` instruction with the one to select; `null` when malformed. */
function inspectPages(data: JsonObject): { pages: InspectPage[]; selected: number } | null {
	if (data.method !== INSPECT_METHOD || !Array.isArray(data.pages)) return null;
	const pages: InspectPage[] = [];
	for (const page of data.pages) {
		if (
			!isObject(page) ||
			typeof page.key !== "string" ||
			typeof page.title !== "string" ||
			!Array.isArray(page.lines) ||
			!page.lines.every((line) => typeof line === "string")
		) {
			return null;
		}
		pages.push({ key: page.key, title: page.title, lines: page.lines as string[] });
	}
	const selected = typeof data.selected === "number" && data.selected >= 0 && data.selected < pages.length ? data.selected : 0;
	return pages.length > 0 ? { pages, selected } : null;
}

/** Asks `/squad <args>` of the bridge, as typed. */
type AskSquad = (args: string) => Promise<Json>;

class InspectPanel {
	private selected: number;
	private stale: string | null = null;
	private timer: ReturnType<typeof setInterval> | undefined;
	handle: { focus(): void; unfocus(): void; isFocused(): boolean } | null = null;

	constructor(
		private readonly components: Tui,
		private readonly screen: { requestRender(): void },
		private readonly theme: Theme,
		private pages: InspectPage[],
		selected: number,
		private readonly finish: () => void,
	) {
		this.selected = selected;
	}

	/** Asks `args` again every second and shows the answer, keeping the selected child. */
	follow(ask: AskSquad, args: string): void {
		let asking = false;
		this.timer = setInterval(() => {
			if (asking) return; // a slow bridge: one question at a time
			asking = true;
			ask(args)
				.then((answer) => {
					const ui = isObject(answer) && isObject(answer.ui) ? answer.ui : {};
					const found = inspectPages(ui);
					if (found === null) {
						// `/squad watch` of a squad that stopped running says so instead.
						this.stale = typeof ui.text === "string" ? ui.text : "no pages in the answer";
						this.screen.requestRender();
						return;
					}
					const key = this.pages[this.selected]?.key;
					const kept = found.pages.findIndex((page) => page.key === key);
					this.pages = found.pages;
					this.selected = kept >= 0 ? kept : Math.min(this.selected, found.pages.length - 1);
					this.stale = null;
					this.screen.requestRender();
				})
				.catch((error: unknown) => {
					// A squad that ended has nothing left to inspect: the last pages stay, marked.
					this.stale = errorText(error);
					this.screen.requestRender();
				})
				.finally(() => {
					asking = false;
				});
		}, INSPECT_REFRESH_MS);
		// Never what keeps Pi running once it means to exit.
		this.timer.unref?.();
	}

	stop(): void {
		if (this.timer !== undefined) clearInterval(this.timer);
		this.timer = undefined;
	}

	close(): void {
		this.stop();
		this.finish();
	}

	render(width: number): string[] {
		const { theme } = this;
		const fit = (text: string): string =>
			theme.bg("customMessageBg", this.components.truncateToWidth(` ${text}`, width, "…", true));
		const page = this.pages[this.selected];
		const hint = `pi-squad inspect · child ${this.selected + 1}/${this.pages.length} · ←/→ child · Tab editor · Esc close`;
		const lines = [fit(theme.fg("muted", hint)), fit(theme.bold(page.title))];
		for (const line of page.lines) lines.push(fit(line));
		if (this.stale !== null) lines.push(fit(theme.fg("warning", `not updated: ${this.stale}`)));
		return lines;
	}

	handleInput(data: string): void {
		const { matchesKey } = this.components;
		if (matchesKey(data, "escape") || matchesKey(data, INSPECT_SHORTCUT)) {
			this.close();
			return;
		}
		if (matchesKey(data, "tab")) {
			this.handle?.unfocus();
			return;
		}
		const step = matchesKey(data, "left") || matchesKey(data, "up") ? -1 : matchesKey(data, "right") || matchesKey(data, "down") ? 1 : 0;
		if (step === 0) return;
		this.selected = (this.selected + step + this.pages.length) % this.pages.length;
		this.screen.requestRender();
	}

	invalidate(): void {}
}

/** The open overlay, if any: one at a time. */
let inspectOpen: InspectPanel | null = null;

/**
 * Draws an `inspect` instruction: into the open overlay, else a new one that follows `args`.
 * Without Pi's terminal UI (RPC), the selected page as a notification. Returns at once.
 */
function openInspect(components: Tui | null, ctx: ExtensionContext, data: JsonObject, ask: AskSquad, args: string): void {
	const found = inspectPages(data);
	if (found === null) {
		log("ignored a malformed inspect instruction");
		return;
	}
	if (components === null || ctx.mode !== "tui") {
		const page = found.pages[found.selected];
		ctx.ui.notify([page.title, ...page.lines].join("\n"), "info");
		return;
	}
	if (inspectOpen !== null) {
		inspectOpen.handle?.focus();
		return;
	}
	ctx.ui
		.custom<void>(
			(screen, theme, _keybindings, done) => {
				const panel = new InspectPanel(components, screen, theme, found.pages, found.selected, () => done(undefined));
				inspectOpen = panel;
				panel.follow(ask, args);
				return panel;
			},
			{
				overlay: true,
				overlayOptions: { anchor: "top-center", width: "90%", maxHeight: "60%", margin: 1 },
				onHandle: (handle) => {
					if (inspectOpen !== null) inspectOpen.handle = handle;
				},
			},
		)
		.catch((error: unknown) => log(`inspect: ${errorText(error)}`))
		.finally(() => {
			inspectOpen?.stop();
			inspectOpen = null;
		});
}

/** alt+i: the inspect overlay of the squads in view, or the keys back to an open one. */
function registerInspectShortcut(pi: ExtensionAPI, components: Tui | null, ask: AskSquad): void {
	pi.registerShortcut(INSPECT_SHORTCUT, {
		description: "pi-squad: inspect each child of the squads in view",
		handler: async (ctx: ExtensionContext) => {
			if (inspectOpen !== null) {
				inspectOpen.handle?.focus();
				return;
			}
			try {
				const answer = await ask("inspect");
				if (isObject(answer) && isObject(answer.ui) && answer.ui.method === INSPECT_METHOD) {
					openInspect(components, ctx, answer.ui, ask, "inspect");
				}
			} catch (error) {
				ctx.ui.notify(error instanceof BridgeRefusal ? error.message : FAILURE + errorText(error), "warning");
			}
		},
	});
}

// -- A command's dialog (a `question` in a command answer; docs/bridge.md) --
// Python decides what to ask and what the answers mean; this only asks one question in Pi's own
// dialog and hands the answer back, to be sent with the command again beside the earlier ones.

interface Answered {
	key: string;
	value: string;
	args: string;
}

/**
 * Asks a command answer's `question` (select, input or editor): the answer and the args to send
 * it with; `null` when there is nothing to ask, or when the person pressed Esc (the question's
 * `cancelled` text is shown then, and nothing more is sent).
 */
async function askQuestion(ctx: ExtensionContext, question: Json | undefined): Promise<Answered | null> {
	if (!isObject(question) || !ctx.hasUI) return null;
	const { key, kind, title, args, cancelled } = question;
	if (typeof key !== "string" || typeof title !== "string" || typeof args !== "string") {
		log("ignored a malformed question");
		return null;
	}
	let value: string | undefined;
	if (kind === "select" && Array.isArray(question.options)) {
		value = await ctx.ui.select(title, question.options.filter((option): option is string => typeof option === "string"));
	} else if (kind === "editor") {
		value = await ctx.ui.editor(title);
	} else if (kind === "input") {
		value = await ctx.ui.input(title);
	} else {
		log(`ignored a question of kind ${JSON.stringify(kind)}`);
		return null;
	}
	if (value === undefined) {
		ctx.ui.notify(typeof cancelled === "string" ? cancelled : "Cancelled: nothing was sent.", "info");
		return null;
	}
	return { key, value, args };
}

export default async function piSquad(pi: ExtensionAPI): Promise<void> {
	const role = process.env.PI_SQUAD_CHILD === "1" ? "child" : "main";
	const timeoutMs = positiveInt(process.env.PI_SQUAD_BRIDGE_TIMEOUT_MS, DEFAULT_TIMEOUT_MS);
	const startTimeoutMs = positiveInt(process.env.PI_SQUAD_BRIDGE_START_TIMEOUT_MS, DEFAULT_START_TIMEOUT_MS);
	// The main role's tools may plan a squad or hash gigabytes of artifacts; a child's reader
	// answers in milliseconds. Either way a missing answer fails the tool, never allows it.
	const executeTimeoutMs = positiveInt(
		process.env.PI_SQUAD_BRIDGE_EXECUTE_TIMEOUT_MS,
		role === "main" ? DEFAULT_MAIN_EXECUTE_TIMEOUT_MS : timeoutMs,
	);

	// The UI of the current session, from the last handler Pi gave a context to; bridge events
	// that arrive between handlers (a driver thread's progress) draw through it.
	let ui: UiContext | null = null;
	// The tool rows of this process's running executions, by tool call id.
	const toolUpdates = new Map<string, ToolUpdate>();
	// The context and abort signal of each running execution: a `confirm` asks through them.
	const toolContexts = new Map<string, { ctx: ExtensionContext; signal?: AbortSignal }>();
	// Assigned once the bridge runs; an event only ever arrives from a running bridge.
	let bridge: Bridge;
	const answerConfirm = async (data: JsonObject): Promise<void> => {
		const running = typeof data.toolCallId === "string" ? toolContexts.get(data.toolCallId) : undefined;
		let confirmed = false;
		if (running !== undefined && running.ctx.hasUI && typeof data.title === "string" && typeof data.message === "string") {
			try {
				confirmed = await running.ctx.ui.confirm(data.title, data.message, { signal: running.signal });
			} catch (error) {
				log(`confirm failed: ${errorText(error)}`);
			}
		}
		// Unanswerable (no UI, the call is gone): declined, never approved by default.
		await bridge.request("ui_answer", { requestId: data.requestId ?? "", confirmed }, timeoutMs);
	};
	const deliver = (event: string, data: JsonObject): void => {
		if (event === "ui") {
			if (ui !== null) showOnUi(ui, data);
			return;
		}
		if (event === "tool_update") {
			const update = typeof data.toolCallId === "string" ? toolUpdates.get(data.toolCallId) : undefined;
			if (update !== undefined && typeof data.text === "string") {
				update({ content: [{ type: "text", text: data.text }], details: {} });
			}
			return;
		}
		if (event === "confirm") {
			answerConfirm(data).catch((error) => log(`ui_answer: ${errorText(error)}`));
			return;
		}
		if (event === "send_message" && isObject(data.message)) {
			// A message may carry a durable transcript entry (a detached flow's card), appended
			// as a tool answer's is: kept in the session file, drawn by its entry renderer.
			const entry = isObject(data.message.details) ? data.message.details.entry : undefined;
			if (isObject(entry) && typeof entry.customType === "string" && isObject(entry.data)) {
				pi.appendEntry(entry.customType, entry.data);
			}
			// The shapes are Python's to get right (docs/bridge.md); Pi validates what it uses.
			type Send = Parameters<ExtensionAPI["sendMessage"]>;
			pi.sendMessage(
				data.message as unknown as Send[0],
				isObject(data.options) ? (data.options as unknown as Send[1]) : undefined,
			);
			return;
		}
		log(`ignored bridge event ${JSON.stringify(event)}`);
	};

	// The TUI components the main role draws its transcript entries with. Through Pi's module
	// loader (jiti) this import costs about half a second, so a child never makes it, and the
	// main role starts it beside the bridge's own start-up rather than after it.
	const tui: Promise<Tui | null> | null =
		role === "main"
			? import("@earendil-works/pi-tui").catch((error: unknown) => {
					log(`cannot load @earendil-works/pi-tui: ${errorText(error)}`);
					return null;
				})
			: null;
	let hello: Hello;
	let command: BridgeCommand | null = null;
	const unavailable = (reason: string): void => {
		if (role === "child") blockEverything(pi, reason);
		else reportUnavailable(pi, reason, command?.source ?? "PI_SQUAD_BRIDGE");
	};
	try {
		command = bridgeCommand(role);
		bridge = new Bridge(command.argv, deliver);
	} catch (error) {
		unavailable(`cannot start the bridge: ${errorText(error)}`);
		return;
	}
	try {
		hello = parseHello(await bridge.request("hello", { role }, startTimeoutMs));
	} catch (error) {
		bridge.close();
		unavailable(`hello failed: ${errorText(error)}`);
		return;
	}
	if (debug) log(`bridge ready: role=${role} source=${command.source} argv=${JSON.stringify(command.argv)}`);
	const reg = hello.registrations;
	const installsNothing =
		reg.tools.length === 0 &&
		reg.commands.length === 0 &&
		reg.entryRenderers.length === 0 &&
		reg.navigation.length === 0 &&
		!reg.guard &&
		!reg.messageEnd &&
		!reg.context &&
		!reg.providerRequest &&
		!reg.bootstrap &&
		!reg.lifecycle;
	if (installsNothing) {
		bridge.close(); // a legacy child: Pi behaves exactly as without this extension
		return;
	}

	for (const tool of reg.tools) {
		pi.registerTool({
			name: tool.name,
			label: tool.label,
			description: tool.description,
			// A plain JSON Schema object from Python: Pi validates arguments against it.
			parameters: tool.parameters as unknown as ToolParameters,
			async execute(
				toolCallId: string,
				params: unknown,
				signal: AbortSignal | undefined,
				onUpdate: ToolUpdate | undefined,
				ctx: ExtensionContext,
			) {
				let result: Json;
				if (onUpdate !== undefined) toolUpdates.set(toolCallId, onUpdate);
				toolContexts.set(toolCallId, { ctx, signal });
				// Esc (or RPC `abort`): Python stops the call's work and answers with what it has.
				const cancel = (): void => {
					bridge.request("cancel_tool", { toolCallId }, timeoutMs).catch((error) => log(`cancel_tool: ${errorText(error)}`));
				};
				// Only the main role serves `cancel_tool`; a child's reader answers in milliseconds.
				const cancellable = role === "main" ? signal : undefined;
				cancellable?.addEventListener("abort", cancel, { once: true });
				try {
					const request: JsonObject = { toolCallId, toolName: tool.name, params: params as Json };
					if (tool.sessionModels) request.sessionModels = describeSession(pi, ctx);
					const answer = bridge.request("execute_tool", request, executeTimeoutMs);
					if (cancellable?.aborted) cancel();
					result = await answer;
				} catch (error) {
					throw new Error(error instanceof BridgeRefusal && error.code === "tool_failed" ? error.message : FAILURE + errorText(error));
				} finally {
					cancellable?.removeEventListener("abort", cancel);
					toolUpdates.delete(toolCallId);
					toolContexts.delete(toolCallId);
				}
				if (
					!isObject(result) ||
					!Array.isArray(result.texts) ||
					!result.texts.every((text) => typeof text === "string") ||
					!isObject(result.details)
				) {
					throw new Error(`${FAILURE}malformed execute_tool reply`);
				}
				// A durable transcript entry (the flow card): kept in the session file, never
				// sent to the model, drawn by the entry renderers registered below.
				const entry = result.details.entry;
				if (isObject(entry) && typeof entry.customType === "string" && isObject(entry.data)) {
					pi.appendEntry(entry.customType, entry.data);
				}
				return {
					content: (result.texts as string[]).map((text) => ({ type: "text" as const, text })),
					details: result.details,
				};
			},
		});
	}

	const components = reg.entryRenderers.length > 0 && tui !== null ? await tui : null;
	for (const customType of components === null ? [] : reg.entryRenderers) {
		pi.registerEntryRenderer(customType, (entry, _options, theme) =>
			renderLines(components as Tui, customType, entry.data, theme),
		);
	}

	// The inspect overlay's parts (its block above): the TUI module and `/squad` as typed.
	const inspectTui = role === "main" && tui !== null ? await tui : null;
	const askSquad: AskSquad = (args) => bridge.request("command", { name: "squad", args }, timeoutMs);
	if (reg.commands.some((command) => command.name === "squad")) registerInspectShortcut(pi, inspectTui, askSquad);

	for (const command of reg.commands) {
		pi.registerCommand(command.name, {
			description: command.description,
			// Tab: the argument texts Python offers for what is typed (`complete`, docs/bridge.md);
			// none when it cannot answer, so the editor simply offers nothing.
			getArgumentCompletions: async (text: string) => {
				try {
					const answer = await bridge.request("complete", { name: command.name, text }, timeoutMs);
					if (!isObject(answer) || !Array.isArray(answer.items)) return null;
					const items = answer.items.filter((item): item is string => typeof item === "string");
					const offered = items.map((value) => ({ value, label: value.slice(value.lastIndexOf(" ") + 1) }));
					return offered.length > 0 ? offered : null;
				} catch (error) {
					log(`complete: ${errorText(error)}`);
					return null;
				}
			},
			// `answers`: a dialog's so far (its block above), sent with the command again.
			handler: async function run(args: string, ctx: ExtensionContext, answers: JsonObject = {}): Promise<void> {
				if (ctx.hasUI) ui = ctx.ui;
				let answer: Json;
				try {
					const request: JsonObject = { name: command.name, args };
					if (Object.keys(answers).length > 0) request.answers = answers;
					if (command.sessionModels) request.sessionModels = describeSession(pi, ctx);
					answer = await bridge.request("command", request, executeTimeoutMs);
				} catch (error) {
					const text = error instanceof BridgeRefusal ? error.message : FAILURE + errorText(error);
					if (ctx.hasUI) ctx.ui.notify(text, "error");
					else log(text);
					return;
				}
				if (!isObject(answer)) return;
				if (isObject(answer.ui) && ctx.hasUI && answer.ui.method === INSPECT_METHOD) {
					openInspect(inspectTui, ctx, answer.ui, askSquad, args);
				} else if (isObject(answer.ui) && ctx.hasUI) showOnUi(ctx.ui, answer.ui);
				if (isObject(answer.message)) deliver("send_message", { message: answer.message });
				const next = await askQuestion(ctx, answer.question);
				if (next !== null) await run(next.args, ctx, { ...answers, [next.key]: next.value });
			},
		});
	}

	if (reg.guard) {
		pi.on("tool_call", async (event) => {
			try {
				const answer = await bridge.request(
					"tool_call",
					{ toolCallId: event.toolCallId, toolName: event.toolName, input: event.input as Json },
					timeoutMs,
				);
				if (!isObject(answer) || typeof answer.block !== "boolean") {
					return { block: true, reason: `${FAILURE}malformed tool_call reply` };
				}
				if (!answer.block) return undefined;
				return { block: true, reason: typeof answer.reason === "string" ? answer.reason : `${FAILURE}blocked` };
			} catch (error) {
				return { block: true, reason: FAILURE + errorText(error) };
			}
		});
	}

	if (reg.messageEnd) {
		pi.on("message_end", async (event) => {
			let message = event.message as unknown as JsonObject;
			if (message.role === "assistant") {
				// Only the tool calls, with the arguments as the model sent them: Pi coerces
				// arguments before tool_call, so the guard checks the raw ones from here.
				const content = Array.isArray(message.content) ? message.content : [];
				const calls = content.filter((block) => isObject(block) && block.type === "toolCall");
				if (calls.length === 0) return undefined;
				message = { role: "assistant", content: calls };
			} else if (message.role !== "toolResult") {
				return undefined;
			}
			try {
				// Awaited: the delivery is matched to its execution and queued for commit.
				await bridge.request("message_end", { message }, timeoutMs);
			} catch (error) {
				log(`message_end: ${errorText(error)}`);
			}
			return undefined; // never replaces the message
		});
	}

	if (reg.context) {
		// Before every model call: the deliveries received so far are committed first, so
		// the model's next turn (and any tool it asks for there) comes after its reads count.
		// A failure is logged; those deliveries do not count and the guard stays closed.
		pi.on("context", async () => {
			try {
				await bridge.request("context", {}, timeoutMs);
			} catch (error) {
				log(`context: ${errorText(error)}`);
			}
			return undefined; // never changes the messages
		});
	}

	if (reg.providerRequest) {
		// Right before each model request leaves: Pi awaits this handler and sends the payload
		// only once it returns. The bridge admits the request, or this process stops
		// (`stopNow`): a refused admission, or a bridge that cannot answer (dead, timed out,
		// `ok:false`, malformed). The parent sees the exit on the worker's stream and says in
		// the receipt how it ended.
		pi.on("before_provider_request", async () => {
			let admitted = false;
			try {
				const answer = await bridge.request("provider_request", {}, timeoutMs);
				admitted = isObject(answer) && answer.admit === true;
				if (!admitted) log("provider_request: the model request was not admitted; stopping");
			} catch (error) {
				log(`provider_request: ${errorText(error)}; stopping`);
			}
			if (admitted) return undefined; // the payload unchanged
			return stopNow();
		});
	}

	if (reg.bootstrap) {
		pi.on("before_agent_start", async (event) => {
			let addition: string | null;
			try {
				const answer = await bridge.request("before_agent_start", {}, timeoutMs);
				addition = isObject(answer) && typeof answer.append === "string" ? answer.append : null;
			} catch (error) {
				addition = FAILURE + errorText(error);
			}
			return addition === null ? undefined : { systemPrompt: `${event.systemPrompt}\n\n${addition}` };
		});
	}

	if (reg.lifecycle) {
		pi.on("session_start", async (_event, ctx) => {
			if (ctx.hasUI) ui = ctx.ui;
			try {
				await bridge.request("session_start", { hasUI: ctx.hasUI, ...sessionIdentity(ctx) }, startTimeoutMs);
			} catch (error) {
				log(`session_start: ${errorText(error)}`);
			}
		});
		pi.on("session_shutdown", async (event) => {
			try {
				// The reason (quit, reload, new, resume, fork) names the navigation in receipts.
				await bridge.request("session_shutdown", { reason: event.reason }, timeoutMs);
			} catch (error) {
				log(`session_shutdown: ${errorText(error)}`);
			} finally {
				bridge.close();
			}
		});
	} else {
		pi.on("session_shutdown", async () => bridge.close());
	}

	// Pi's session-switching events the bridge listed (the main role with delegation): sent
	// without awaiting the answer and never cancelling, so neither a slow nor a dead bridge
	// holds up the user's /new, /resume, /fork, /clone or /tree; a failure is only logged.
	const navigate = (event: string, detail: JsonObject): undefined => {
		bridge.request("navigation", { event, ...detail }, timeoutMs).catch((error) => log(`${event}: ${errorText(error)}`));
		return undefined;
	};
	const forwarded = new Set(reg.navigation);
	if (forwarded.has("session_before_switch")) {
		pi.on("session_before_switch", async (event) => navigate(event.type, { reason: event.reason }));
	}
	if (forwarded.has("session_before_fork")) {
		pi.on("session_before_fork", async (event) => navigate(event.type, { position: event.position }));
	}
	if (forwarded.has("session_before_tree")) {
		pi.on("session_before_tree", async (event) => navigate(event.type, {}));
	}
}
