// A test extension: `/nav-tree` navigates the session tree to the session's first entry (what
// the user's `/tree` selection does), then says so; RPC mode has no tree command of its own.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function treeNavigation(pi: ExtensionAPI): void {
	pi.registerCommand("nav-tree", {
		description: "test: navigate the session tree to the first entry",
		handler: async (_args, ctx) => {
			const first = ctx.sessionManager.getEntries()[0];
			const result = await ctx.navigateTree(first.id, { summarize: false });
			ctx.ui.notify(`nav-tree done: cancelled=${result.cancelled}`, "info");
		},
	});
}
