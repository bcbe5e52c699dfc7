import { useState } from "preact/hooks";
import { credentials } from "../api/credentials.ts";
import { rest, type KeyJson } from "../api/rest.ts";
import { NewKey } from "../components/new-key.tsx";

/** The key form: the key is checked against the API, then kept in this tab's sessionStorage only. */
export function SignIn({
  reason,
  onSignedIn,
  created,
  clearCreated,
}: {
  reason: string;
  onSignedIn: () => void;
  created?: KeyJson | undefined;
  clearCreated: () => void;
}) {
  const [key, setKey] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const signIn = async (secret: string) => {
    setBusy(true);
    setError("");
    try {
      await rest("GET", "/v1/sessions?limit=1", undefined, { key: secret });
      credentials.set(secret);
      clearCreated();
      onSignedIn();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const submit = (e: Event) => {
    e.preventDefault();
    void signIn(key.trim());
  };
  return (
    <main class="center">
      <form class="card signin" onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">Sign in to roz</h1>
        {reason && (
          <p class="notice" role="status">
            {reason}
          </p>
        )}
        {created?.key && <NewKey created={created} onDone={clearCreated} onUse={() => void signIn(created.key ?? "")} />}
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="off"
          placeholder="roz_sk_…"
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          required
        />
        {error && (
          <p class="field-error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy || key.trim() === ""}>
          Sign in
        </button>
        <p class="hint">The key stays in this browser tab (sessionStorage) and is sent only to this server.</p>
      </form>
    </main>
  );
}
