import { useState } from "preact/hooks";
import { rest, restAll, type EnvironmentJson, type RuleJson } from "../api/rest.ts";
import { ConfirmButton } from "../components/confirm-button.tsx";
import { FieldError, formErrorOf, unplaced, type FormError } from "../components/field.tsx";
import { usePoll } from "../components/use-poll.ts";
import { RuleRow } from "./environment-rule.tsx";

interface Draft {
  id?: string;
  name: string;
  kind: string;
  default_model: string;
  system_instructions: string;
  is_default: boolean;
  /** "" leaves the team tools to the server default. */
  teams: "" | "on" | "off";
  permissions: RuleJson[];
}

/** The kind an environment has when none was given: shown as "–", it says nothing. */
const NO_KIND = "default";
const KIND_HINT = "A label of your own for grouping environments (e.g. robot, ci). roz does not act on it.";

const blank = (): Draft => ({ name: "", kind: "default", default_model: "", system_instructions: "", is_default: false, teams: "", permissions: [] });

const draftOf = (e: EnvironmentJson): Draft => ({
  id: e.id,
  name: e.name,
  kind: e.kind,
  default_model: e.default_model ?? "",
  system_instructions: e.system_instructions ?? "",
  is_default: e.is_default,
  teams: e.teams === undefined ? "" : e.teams.enabled ? "on" : "off",
  permissions: e.permissions.map((r) => ({ ...r })),
});

/** The REST body: empty optional fields are left out on create and cleared (null) on edit. */
function bodyOf(d: Draft): Record<string, unknown> {
  const clear = d.id ? null : undefined;
  const body: Record<string, unknown> = {
    name: d.name,
    kind: d.kind,
    is_default: d.is_default,
    permissions: d.permissions.map((r) => ({
      tool_pattern: r.tool_pattern,
      policy: r.policy,
      ...(r.category ? { category: r.category } : {}),
      ...(r.reason ? { reason: r.reason } : {}),
    })),
    default_model: d.default_model.trim() || clear,
    system_instructions: d.system_instructions || clear,
    teams: d.teams === "" ? clear : { enabled: d.teams === "on" },
  };
  return Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
}

function Editor({ initial, onSaved, onCancel }: { initial: Draft; onSaved: () => void; onCancel: () => void }) {
  const [d, setD] = useState(initial);
  const [error, setError] = useState<FormError | undefined>();
  const [busy, setBusy] = useState(false);
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      if (d.id) await rest("PATCH", `/v1/environments/${d.id}`, bodyOf(d));
      else await rest("POST", "/v1/environments", bodyOf(d));
      onSaved();
    } catch (err) {
      setError(formErrorOf(err));
    } finally {
      setBusy(false);
    }
  };
  const known = [
    "name",
    "kind",
    "default_model",
    "system_instructions",
    ...d.permissions.flatMap((_, i) => ["tool_pattern", "policy", "reason"].map((n) => `permissions.${i}.${n}`)),
  ];
  const input = (field: "name" | "kind" | "default_model", label: string, hint?: string) => (
    <>
      <label for={`env-${field}`}>{label}</label>
      {hint && (
        <span class="hint" id={`hint-${field}`}>
          {hint}
        </span>
      )}
      <input
        id={`env-${field}`}
        data-field={field}
        aria-describedby={`err-${field}${hint ? ` hint-${field}` : ""}`}
        value={d[field]}
        onInput={(e) => setD({ ...d, [field]: e.currentTarget.value })}
      />
      <FieldError error={error} field={field} id={`err-${field}`} />
    </>
  );
  return (
    <form class="card form" onSubmit={save} aria-label={d.id ? `Edit ${initial.name}` : "New environment"}>
      <h2>{d.id ? `Edit ${initial.name}` : "New environment"}</h2>
      {input("name", "Name")}
      {input("kind", "Kind", KIND_HINT)}
      {input("default_model", "Default model (provider/model)")}
      <label for="env-instructions">System instructions</label>
      <textarea id="env-instructions" rows={3} value={d.system_instructions} onInput={(e) => setD({ ...d, system_instructions: e.currentTarget.value })} />
      <FieldError error={error} field="system_instructions" id="err-system_instructions" />
      <label class="check">
        <input type="checkbox" checked={d.is_default} onChange={(e) => setD({ ...d, is_default: e.currentTarget.checked })} />
        The tenant's default: sessions that name no environment use it
      </label>
      <label for="env-teams">Team tools (spawn_worker, wait_for_workers)</label>
      <select id="env-teams" value={d.teams} onChange={(e) => setD({ ...d, teams: e.currentTarget.value as Draft["teams"] })}>
        <option value="">the server's default (ROZ_TEAMS_DEFAULT)</option>
        <option value="on">on: the model may start workers</option>
        <option value="off">off</option>
      </select>
      <h3>Permission rules (first match wins)</h3>
      {d.permissions.map((r, i) => (
        <RuleRow
          rule={r}
          index={i}
          error={error}
          change={(next) => setD({ ...d, permissions: d.permissions.map((x, j) => (j === i ? next : x)) })}
          remove={() => setD({ ...d, permissions: d.permissions.filter((_, j) => j !== i) })}
        />
      ))}
      <button
        type="button"
        class="secondary"
        onClick={() => setD({ ...d, permissions: [...d.permissions, { tool_pattern: "", policy: "require_confirmation" }] })}
      >
        Add rule
      </button>
      {unplaced(error, known) && (
        <p class="field-error" role="alert">
          {error?.message}
        </p>
      )}
      <div class="row">
        <button type="submit" disabled={busy}>
          Save
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

/** Environments of the tenant: list, create, edit (permission rules included), delete. */
export function EnvironmentsView() {
  const { value: envs, error, reload } = usePoll(() => restAll<EnvironmentJson>("/v1/environments"), 0);
  const [editing, setEditing] = useState<Draft | undefined>();
  const [deleteError, setDeleteError] = useState("");
  const remove = async (e: EnvironmentJson) => {
    setDeleteError("");
    try {
      await rest("DELETE", `/v1/environments/${e.id}`);
      if (editing?.id === e.id) setEditing(undefined);
      reload();
    } catch (err) {
      setDeleteError((err as Error).message);
    }
  };
  return (
    <section class="page" aria-labelledby="envs-title">
      <div class="page-head">
        <h1 id="envs-title">Environments</h1>
        <button type="button" onClick={() => setEditing(blank())}>
          New environment
        </button>
      </div>
      <p class="muted">
        A session runs in an environment: its default model, instructions and permission rules. Sessions that name none use the tenant's default (made for the
        first session if there is none). The kind is a label of your own for grouping them; roz does not act on it.
      </p>
      {(error || deleteError) && (
        <p class="field-error" role="alert">
          {error || deleteError}
        </p>
      )}
      {editing && (
        <Editor
          key={editing.id ?? "new"}
          initial={editing}
          onCancel={() => setEditing(undefined)}
          onSaved={() => {
            setEditing(undefined);
            reload();
          }}
        />
      )}
      <table class="table">
        <thead>
          <tr>
            <th>name</th>
            <th title={KIND_HINT}>kind</th>
            <th>default model</th>
            <th>rules</th>
            <th>
              <span class="sr-only">actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {(envs ?? []).map((e) => (
            <tr data-env={e.name}>
              <td>
                {e.name} {e.is_default && <span class="badge">tenant default</span>} {e.teams?.enabled && <span class="badge">team tools</span>}
              </td>
              <td>
                {e.kind === NO_KIND ? (
                  <span class="muted" title="no kind given">
                    –
                  </span>
                ) : (
                  e.kind
                )}
              </td>
              <td>{e.default_model ?? "–"}</td>
              <td>{e.permissions.map((r) => `${r.tool_pattern}: ${r.policy}`).join(", ") || "–"}</td>
              <td class="actions">
                <button type="button" class="link" onClick={() => setEditing(draftOf(e))} aria-label={`Edit ${e.name}`}>
                  Edit
                </button>
                <ConfirmButton
                  label="Delete"
                  ariaLabel={`Delete ${e.name}`}
                  question={`Delete ${e.name}?${e.is_default ? " Sessions that name no environment get a new default." : ""} Its sessions keep their history.`}
                  confirm="Yes, delete"
                  onConfirm={() => void remove(e)}
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
