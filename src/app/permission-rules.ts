import { compileGlob, type PermissionRule } from "../agent/index.ts";
import { RozError } from "../errors/index.ts";

const policies = new Set(["allow", "require_confirmation", "deny"]);

/**
 * Validates a list of permission rules given as JSON (`tool_pattern` or `toolPattern`).
 * `source` names where they came from in the error message.
 */
export function validatePermissionRules(value: unknown, source: string): PermissionRule[] {
  if (!Array.isArray(value)) throw new RozError("config_invalid", `${source}: expected a JSON list of rules`);
  return value.map((raw: unknown, i) => {
    const r = (raw ?? {}) as Record<string, unknown>;
    const toolPattern = r["tool_pattern"] ?? r["toolPattern"];
    if (typeof toolPattern !== "string" || toolPattern === "") {
      throw new RozError("config_invalid", `${source}[${i}].tool_pattern must be a non-empty string`);
    }
    const glob = compileGlob(toolPattern);
    if (!glob.ok) throw new RozError("config_invalid", `${source}[${i}].tool_pattern: invalid glob "${toolPattern}": ${glob.error}`);
    if (typeof r["policy"] !== "string" || !policies.has(r["policy"])) {
      throw new RozError("config_invalid", `${source}[${i}].policy must be allow, require_confirmation or deny`);
    }
    const rule: PermissionRule = { toolPattern, policy: r["policy"] as PermissionRule["policy"] };
    if (typeof r["category"] === "string") rule.category = r["category"];
    if (typeof r["reason"] === "string") rule.reason = r["reason"];
    return rule;
  });
}

/** `ROZ_PERMISSION_RULES`: default rules applied after an environment's own. */
export function parsePermissionRules(json: string | undefined): PermissionRule[] {
  if (json === undefined) return [];
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new RozError("config_invalid", "ROZ_PERMISSION_RULES: not valid JSON");
  }
  return validatePermissionRules(value, "ROZ_PERMISSION_RULES");
}
