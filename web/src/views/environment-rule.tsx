import type { RuleJson } from "../api/rest.ts";
import { FieldError, type FormError } from "../components/field.tsx";

const policies: RuleJson["policy"][] = ["allow", "require_confirmation", "deny"];

/** One permission rule of the environment editor. */
export function RuleRow({
  rule,
  index,
  error,
  change,
  remove,
}: {
  rule: RuleJson;
  index: number;
  error: FormError | undefined;
  change: (r: RuleJson) => void;
  remove: () => void;
}) {
  const f = (name: string) => `permissions.${index}.${name}`;
  return (
    <fieldset class="rule" aria-label={`Rule ${index + 1}`}>
      <label>
        Tool pattern
        <input
          value={rule.tool_pattern}
          data-field={f("tool_pattern")}
          aria-describedby={`err-${f("tool_pattern")}`}
          onInput={(e) => change({ ...rule, tool_pattern: e.currentTarget.value })}
        />
        <FieldError error={error} field={f("tool_pattern")} id={`err-${f("tool_pattern")}`} />
      </label>
      <label>
        Policy
        <select value={rule.policy} data-field={f("policy")} onChange={(e) => change({ ...rule, policy: e.currentTarget.value as RuleJson["policy"] })}>
          {policies.map((p) => (
            <option value={p}>{p}</option>
          ))}
        </select>
        <FieldError error={error} field={f("policy")} id={`err-${f("policy")}`} />
      </label>
      <label>
        Category
        <select
          value={rule.category ?? ""}
          onChange={(e) =>
            change({ ...rule, ...(e.currentTarget.value ? { category: e.currentTarget.value as RuleJson["category"] } : { category: undefined }) })
          }
        >
          <option value="">any</option>
          <option value="physical">physical</option>
          <option value="pure">pure</option>
        </select>
      </label>
      <label>
        Reason
        <input value={rule.reason ?? ""} data-field={f("reason")} onInput={(e) => change({ ...rule, reason: e.currentTarget.value })} />
        <FieldError error={error} field={f("reason")} id={`err-${f("reason")}`} />
      </label>
      <button type="button" class="link" onClick={remove} aria-label={`Remove rule ${index + 1}`}>
        Remove
      </button>
    </fieldset>
  );
}
