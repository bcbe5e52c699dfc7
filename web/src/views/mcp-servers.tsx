import { useState } from "preact/hooks";
import { rest } from "../api/rest.ts";
import { FieldError, type FormError, formErrorOf, unplaced } from "../components/field.tsx";
import { usePoll } from "../components/use-poll.ts";

/** An MCP server as REST shows it (credentials never: only whether it has some). */
interface McpServerJson {
  name: string;
  url: string;
  enabled: boolean;
  auth_kind: string;
  /** `oauth_pending`: an OAuth server waiting for its user's authorization. */
  health_status: "healthy" | "degraded" | "oauth_pending";
  failure_count: number;
  degraded_at?: string;
  last_error?: string;
  has_credentials: boolean;
  session_id?: string;
  /** Only in the answer to registering an OAuth server. */
  oauth_pending?: { approval_id: string; authorization_url: string; status: string };
}

type AuthKind = "none" | "bearer" | "static_header" | "oauth";

interface Draft {
  name: string;
  url: string;
  auth: AuthKind;
  token: string;
  headerName: string;
  headerValue: string;
  /** OAuth scopes, separated by spaces. */
  scopes: string;
}

const blank = (): Draft => ({ name: "", url: "", auth: "none", token: "", headerName: "", headerValue: "", scopes: "" });

function authOf(d: Draft): Record<string, unknown> {
  if (d.auth === "bearer") return { kind: "bearer", token: d.token };
  if (d.auth === "static_header") return { kind: "static_header", header_name: d.headerName, header_value: d.headerValue };
  if (d.auth === "oauth") return { kind: "oauth", scopes: d.scopes.split(/\s+/).filter((s) => s !== "") };
  return { kind: "none" };
}

const FIELDS = ["name", "url", "auth.token", "auth.header_name", "auth.header_value", "auth.scopes"];

/** The server's OAuth authorization, to open in this browser; it is usable once the authorization server sends the user back. */
function Authorize({ name, url }: { name: string; url: string }) {
  return (
    <p class="card" role="status" data-oauth-pending={name}>
      <b>{name}</b> waits for its OAuth authorization:{" "}
      <a href={url} target="_blank" rel="noopener noreferrer">
        Authorize {name}
      </a>{" "}
      (the link works once, for 15 minutes; registering again gives a new one).
    </p>
  );
}

function AddServer({ added }: { added: () => void }) {
  const [d, setD] = useState(blank);
  const [error, setError] = useState<FormError | undefined>();
  const [pending, setPending] = useState<{ name: string; url: string } | undefined>();
  const set = (patch: Partial<Draft>) => setD({ ...d, ...patch });
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    setPending(undefined);
    try {
      const server = await rest<McpServerJson>("POST", "/v1/mcp-servers", { name: d.name, url: d.url, enabled: true, auth: authOf(d) });
      if (server.oauth_pending) setPending({ name: server.name, url: server.oauth_pending.authorization_url });
      setD(blank());
      added();
    } catch (err) {
      setError(formErrorOf(err));
    }
  };
  const input = (field: string, label: string, value: string, change: (v: string) => void, secret = false) => {
    const common = { id: `mcp-${field}`, "data-field": field, value, onInput: (e: { currentTarget: HTMLInputElement }) => change(e.currentTarget.value) };
    return (
      <>
        <label for={`mcp-${field}`}>{label}</label>
        {secret ? <input type="password" autocomplete="off" {...common} /> : <input {...common} />}
        <FieldError error={error} field={field} id={`err-mcp-${field}`} />
      </>
    );
  };
  return (
    <form class="card form" onSubmit={submit} aria-label="Add an MCP server">
      <h2>Add a server</h2>
      {input("name", "Name (tools are offered as mcp__name__tool)", d.name, (name) => set({ name }))}
      {input("url", "Streamable HTTP URL", d.url, (url) => set({ url }))}
      <label for="mcp-auth">Authentication</label>
      <select id="mcp-auth" value={d.auth} onChange={(e) => set({ auth: e.currentTarget.value as AuthKind })}>
        <option value="none">none</option>
        <option value="bearer">bearer token</option>
        <option value="static_header">static header</option>
        <option value="oauth">OAuth 2.1</option>
      </select>
      {d.auth === "bearer" && input("auth.token", "Token (stored sealed, never shown again)", d.token, (token) => set({ token }), true)}
      {d.auth === "static_header" && input("auth.header_name", "Header name", d.headerName, (headerName) => set({ headerName }))}
      {d.auth === "static_header" && input("auth.header_value", "Header value (stored sealed)", d.headerValue, (headerValue) => set({ headerValue }), true)}
      {d.auth === "oauth" && input("auth.scopes", "Scopes (space-separated, optional)", d.scopes, (scopes) => set({ scopes }))}
      {unplaced(error, FIELDS) && (
        <p class="field-error" role="alert">
          {error?.message}
        </p>
      )}
      <div class="buttons">
        <button type="submit">Add</button>
      </div>
      {pending && <Authorize name={pending.name} url={pending.url} />}
    </form>
  );
}

function ServerRow({ server, changed }: { server: McpServerJson; changed: () => void }) {
  const [note, setNote] = useState("");
  const path = `/v1/mcp-servers/${encodeURIComponent(server.name)}`;
  const act = (run: () => Promise<unknown>) => () => void run().then(changed, (err: unknown) => setNote((err as Error).message));
  return (
    <tr data-mcp-server={server.name}>
      <td class="mono">{server.name}</td>
      <td class="mono">{server.url}</td>
      <td>
        {server.auth_kind}
        {server.has_credentials && " (sealed)"}
      </td>
      <td data-health={server.health_status}>
        <span class={`badge${server.health_status === "healthy" ? "" : " warn"}`}>{server.health_status.replace("_", " ")}</span>
        {server.failure_count > 0 && ` · ${server.failure_count} failures`}
        {server.last_error && <div class="muted">{server.last_error}</div>}
        {note && <div class="field-error">{note}</div>}
      </td>
      <td class="buttons">
        <button type="button" onClick={act(() => rest("POST", `${path}/health`))}>
          Check now
        </button>
        <button type="button" class="danger" onClick={act(() => rest("DELETE", path))}>
          Delete
        </button>
      </td>
    </tr>
  );
}

/** The tenant's MCP servers: their tools are offered to sessions under the permission rules. */
export function McpServersView() {
  const { value, error, reload } = usePoll(() => rest<{ servers: McpServerJson[] }>("GET", "/v1/mcp-servers"), 5000);
  return (
    <section class="page" aria-labelledby="mcp-title">
      <div class="page-head">
        <h1 id="mcp-title">MCP servers</h1>
        <span class="muted">tools need an allow rule in the environment (e.g. mcp__name__*), or each call asks for approval</span>
      </div>
      {error && (
        <p class="field-error" role="alert">
          {error}
        </p>
      )}
      <table class="list" aria-label="MCP servers">
        <thead>
          <tr>
            <th>name</th>
            <th>url</th>
            <th>auth</th>
            <th>health</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(value?.servers ?? []).map((s) => (
            <ServerRow key={s.name} server={s} changed={reload} />
          ))}
        </tbody>
      </table>
      {value && value.servers.length === 0 && <p class="muted">No MCP servers yet.</p>}
      <AddServer added={reload} />
    </section>
  );
}
