import picomatch from "picomatch";
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

// Tool names are not paths: "/" is an ordinary character in them, so `*` must match it.
// Swapping it for a look-alike in both pattern and name keeps picomatch from treating it
// as a separator.
const asFlatName = (s: string): string => s.replaceAll("/", "\u2215");

/** Compiles environment rules (first) plus the defaults into one evaluator. */
export function createPermissionEvaluator(environmentRules: readonly PermissionRule[]): PermissionEvaluator {
  const rules = [...environmentRules.map((r) => ({ ...r })), ...defaultPermissionRules()];
  const compiled = rules.map((rule) => ({
    rule,
    matches: picomatch(asFlatName(rule.toolPattern), { dot: true }),
    category: rule.category === undefined || rule.category === "" ? undefined : rule.category.toLowerCase(),
  }));
  return {
    rules,
    decide(tool) {
      const category = ruleCategoryOf(tool.category);
      for (const c of compiled) {
        if (c.category !== undefined && c.category !== category) continue;
        if (c.matches(asFlatName(tool.name))) return { policy: c.rule.policy, rule: c.rule };
      }
      // Unreachable while the last default rule matches every name; fail closed anyway.
      return { policy: "deny", rule: { toolPattern: tool.name, policy: "deny", reason: "no rule matched" } };
    },
  };
}
