import { useState } from "preact/hooks";
import { credentials } from "../api/credentials.ts";
import { rest } from "../api/rest.ts";

/** The key form: the key is checked against the API, then kept in this tab's sessionStorage only. */
export function SignIn({ reason, onSignedIn }: { reason: string; onSignedIn: () => void }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    try {
      await rest("GET", "/v1/sessions?limit=1", undefined, { key: key.trim() });
      credentials.set(key.trim());
      onSignedIn();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="center">
      <form class="card signin" onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">Sign in to roz</h1>
        {reason && <p class="notice" role="status">{reason}</p>}
        <label for="api-key">API key</label>
        <input id="api-key" name="api-key" type="password" autocomplete="off" placeholder="roz_sk_…" value={key} onInput={(e) => setKey(e.currentTarget.value)} required />
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
