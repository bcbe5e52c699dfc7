import { useState } from "preact/hooks";
import { rest, restAll, type KeyJson } from "../api/rest.ts";
import { FieldError, formErrorOf, unplaced, type FormError } from "../components/field.tsx";
import { ConfirmButton } from "../components/confirm-button.tsx";
import { usePoll } from "../components/use-poll.ts";
import { NewKey } from "../components/new-key.tsx";
import { ago } from "../format.ts";

const SCOPES = ["sessions", "tasks", "environments", "keys", "mcp", "admin"];
/** The list is read again this often, so "last used" follows keys used elsewhere. */
const KEYS_POLL_MS = 10_000;

function CreateKey({ onCreated }: { onCreated: (k: KeyJson) => void }) {
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<string[]>([]);
  const [error, setError] = useState<FormError | undefined>();
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      onCreated(await rest<KeyJson>("POST", "/v1/auth/keys", { name, ...(scopes.length ? { scopes } : {}) }));
      setName("");
      setScopes([]);
    } catch (err) {
      setError(formErrorOf(err));
    }
  };
  return (
    <form class="card form" onSubmit={submit} aria-label="Create a key">
      <h2>Create a key</h2>
      <label for="key-name">Name</label>
      <input id="key-name" data-field="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
      <FieldError error={error} field="name" id="err-key-name" />
      <fieldset>
        <legend>Scopes (none ticked: the same as your key)</legend>
        {SCOPES.map((s) => (
          <label class="check">
            <input
              type="checkbox"
              checked={scopes.includes(s)}
              onChange={(e) => setScopes(e.currentTarget.checked ? [...scopes, s] : scopes.filter((x) => x !== s))}
            />
            {s}
          </label>
        ))}
      </fieldset>
      <FieldError error={error} field="scopes" id="err-key-scopes" />
      {unplaced(error, ["name", "scopes"]) && (
        <p class="field-error" role="alert">
          {error?.message}
        </p>
      )}
      <button type="submit">Create key</button>
    </form>
  );
}

/** The tenant's keys: list, create (the secret is shown once, here), revoke. */
export function KeysView({ created, setCreated }: { created: KeyJson | undefined; setCreated: (k: KeyJson | undefined) => void }) {
  const { value: keys, error, reload } = usePoll(() => restAll<KeyJson>("/v1/auth/keys"), KEYS_POLL_MS);
  const [revokeError, setRevokeError] = useState("");
  const revoke = async (id: string) => {
    try {
      await rest("DELETE", `/v1/auth/keys/${id}`);
      reload();
    } catch (err) {
      setRevokeError((err as Error).message);
    }
  };
  return (
    <section class="page" aria-labelledby="keys-title">
      <div class="page-head">
        <h1 id="keys-title">API keys</h1>
      </div>
      {created?.key && <NewKey created={created} onDone={() => setCreated(undefined)} />}
      <CreateKey
        onCreated={(k) => {
          setCreated(k);
          reload();
        }}
      />
      {(error || revokeError) && (
        <p class="field-error" role="alert">
          {error || revokeError}
        </p>
      )}
      <table class="table">
        <thead>
          <tr>
            <th>name</th>
            <th>prefix</th>
            <th>scopes</th>
            <th>created</th>
            <th>last used</th>
            <th>state</th>
          </tr>
        </thead>
        <tbody>
          {(keys ?? []).map((k) => (
            <tr data-key={k.prefix}>
              <td>{k.name || "–"}</td>
              <td class="mono">{k.prefix}…</td>
              <td>{k.scopes.join(", ")}</td>
              <td>{ago(k.created_at)}</td>
              <td>{k.last_used_at ? ago(k.last_used_at) : "never"}</td>
              <td>
                {k.revoked_at ? (
                  <span class="badge">revoked</span>
                ) : (
                  <ConfirmButton
                    label="Revoke"
                    ariaLabel={`Revoke ${k.name || k.prefix}`}
                    question="Revoke? It stops working at once."
                    confirm="Yes, revoke"
                    onConfirm={() => void revoke(k.id)}
                  />
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
