import { defaultPermissionRules, type PermissionEvaluator } from "./permissions.ts";
import type { ClientTool, LiveTools, PermissionRule, ServerTool, ToolCategory } from "./types.ts";

/** A server tool as the model is offered it. */
export const offeredAs = (t: ServerTool, category: ToolCategory): ClientTool => ({
  name: t.name,
  description: t.description,
  parametersSchema: t.parametersSchema,
  timeoutMs: 0,
  category,
});

/**
 * The live server tools of one agent (MCP servers' tools): refreshed before each model call,
 * offered after the client tools' names are taken (a client tool of the same name wins), and
 * run by the server. Those marked `needsRule` need approval when only a default rule matches.
 */
export class LiveToolSet {
  readonly #source: LiveTools;
  #byName = new Map<string, ServerTool>();
  #offered: ClientTool[] = [];

  constructor(source: LiveTools) {
    this.#source = source;
  }

  async refresh(signal: AbortSignal): Promise<void> {
    const tools = await this.#source.refresh(signal);
    this.#byName = new Map(tools.map((t) => [t.name, t]));
    this.#offered = tools.map((t) => ({
      name: t.name,
      description: t.description,
      parametersSchema: t.parametersSchema,
      timeoutMs: 0,
      category: "unspecified",
    }));
  }

  /** The live tools whose names no client tool has. */
  offered(clientTools: readonly ClientTool[]): ClientTool[] {
    if (this.#offered.length === 0) return [];
    const taken = new Set(clientTools.map((t) => t.name));
    return this.#offered.filter((t) => !taken.has(t.name));
  }

  get(name: string): ServerTool | undefined {
    return this.#byName.get(name);
  }

  /**
   * `base` where a `needsRule` tool that only a default rule matches needs approval instead: an
   * operator grants trust with an environment or `ROZ_PERMISSION_RULES` rule.
   */
  evaluator(base: PermissionEvaluator): PermissionEvaluator {
    // By value: a worker's rules are its parent's, the parent's defaults copied among them.
    const defaults = defaultPermissionRules();
    const isDefault = (rule: PermissionRule): boolean =>
      defaults.some((d) => d.toolPattern === rule.toolPattern && d.policy === rule.policy && d.category === rule.category && d.reason === rule.reason);
    return {
      rules: base.rules,
      decide: (tool) => {
        const verdict = base.decide(tool);
        if (!isDefault(verdict.rule) || this.#byName.get(tool.name)?.needsRule !== true) return verdict;
        const reason = `tool "${tool.name}" comes from an MCP server: no permission rule allows it`;
        return { policy: "require_confirmation", rule: { toolPattern: tool.name, policy: "require_confirmation", reason } };
      },
    };
  }
}
