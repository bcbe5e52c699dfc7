import { compileGlob } from "./glob.ts";
import { ruleCategoryOf } from "./rule-category.ts";
import type { ClientTool, PermissionPolicy, PermissionRule } from "./types.ts";

/**
 * The rules that apply after the environment's (session-behaviour.md §4): PURE tools are
 * allowed, and so is everything else unless an environment rule said otherwise.
 * Reported as rules so that `SessionStarted.permissions` shows the whole policy.
 */
export function defaultPermissionRules(): PermissionRule[] {
  return [
    { toolPattern: "*", policy: "allow", category: "pure", reason: "pure tools are allowed by default" },
    { toolPattern: "*", policy: "allow", reason: "allowed by default" },
  ];
}

/** The verdict for one tool and the rule that gave it. */
export interface PermissionVerdict {
  policy: PermissionPolicy;
  rule: PermissionRule;
}

/** Evaluates a fixed rule list; built once per agent. */
export interface PermissionEvaluator {
  /** Environment rules, then the defaults: exactly what `decide` walks. */
  readonly rules: PermissionRule[];
  /**
   * First matching rule wins. A rule matches when its glob matches the tool name and,
   * when it names a `category`, the tool has that category (case-insensitive; see
   * `ruleCategoryOf` for tools without one).
   */
  decide(tool: Pick<ClientTool, "name" | "category">): PermissionVerdict;
}

/**
 * The name test of a rule. Patterns are validated when rules are saved or configured; one
 * that still does not compile (stored before the dialect was narrowed) fails closed: an
 * `allow` rule matches nothing, a `deny` or `require_confirmation` rule matches everything.
 */
function ruleMatcher(rule: PermissionRule): (name: string) => boolean {
  const glob = compileGlob(rule.toolPattern);
  if (glob.ok) return glob.matches;
  return rule.policy === "allow" ? () => false : () => true;
}

/** Compiles environment rules (first) plus the defaults into one evaluator. */
export function createPermissionEvaluator(environmentRules: readonly PermissionRule[]): PermissionEvaluator {
  const rules = [...environmentRules.map((r) => ({ ...r })), ...defaultPermissionRules()];
  const compiled = rules.map((rule) => ({
    rule,
    matches: ruleMatcher(rule),
    category: rule.category === undefined || rule.category === "" ? undefined : rule.category.toLowerCase(),
  }));
  return {
    rules,
    decide(tool) {
      const category = ruleCategoryOf(tool.category);
      for (const c of compiled) {
        if (c.category !== undefined && c.category !== category) continue;
        if (c.matches(tool.name)) return { policy: c.rule.policy, rule: c.rule };
      }
      // Unreachable while the last default rule matches every name; fail closed anyway.
      return { policy: "deny", rule: { toolPattern: tool.name, policy: "deny", reason: "no rule matched" } };
    },
  };
}
