import { useEffect, useState } from "preact/hooks";
import { restAll, rest, type EnvironmentJson } from "../api/rest.ts";
import type { AgentClient } from "../api/rpc.ts";
import { FETCH_ALLOW_LIST } from "../session/browser-tools.ts";
import { LiveSession } from "../session/live-session.ts";
import { href, replaceAddress } from "../router.ts";
import { LivePane, useLive } from "./session.tsx";
import { SessionHeading } from "./session-heading.tsx";

/** Pick an environment and a model, write the first message; the session then runs here, attached. */
export function NewSessionView({ client }: { client: AgentClient }) {
  const [envs, setEnvs] = useState<EnvironmentJson[]>([]);
  const [models, setModels] = useState<string[]>([]);
  const [environmentId, setEnvironmentId] = useState("");
  const [model, setModel] = useState("");
  const [message, setMessage] = useState("");
  const [title, setTitle] = useState("");
  const [offerTools, setOfferTools] = useState(true);
  const [live, setLive] = useState<LiveSession | undefined>();
  useLive(live);

  useEffect(() => {
    void restAll<EnvironmentJson>("/v1/environments").then(setEnvs, () => undefined);
    void rest<{ default_model?: string }>("GET", "/v1/version").then(
      (v) => setModels((m) => [...new Set([v.default_model ?? "", "scripted/default", ...m].filter(Boolean))]),
      () => undefined,
    );
  }, []);
  useEffect(() => () => live?.close(), [live]);
  useEffect(() => {
    if (!live) return undefined;
    // Once started, the address names the session, so a reload re-attaches to it.
    return live.subscribe(() => {
      if (live.state.sessionId && !location.hash.includes(live.state.sessionId)) replaceAddress(href.session(live.state.sessionId));
    });
  }, [live]);

  if (live) {
    const id = live.state.sessionId;
    return (
      <section class="page" aria-labelledby="new-title">
        <div class="page-head">{id ? <SessionHeading headingId="new-title" id={id} title={title.trim()} /> : <h1 id="new-title">Starting a session…</h1>}</div>
        <LivePane live={live} />
      </section>
    );
  }

  const start = (e: Event) => {
    e.preventDefault();
    const session = new LiveSession(client, {
      start: { environmentId, ...(model.trim() ? { model: model.trim() } : {}), ...(title.trim() ? { title: title.trim() } : {}) },
      browserTools: offerTools,
      firstMessage: message,
    });
    setLive(session);
    void session.run();
  };
  const envModels = envs.map((e) => e.default_model).filter((m): m is string => !!m);
  const chosen = envs.find((e) => (environmentId === "" ? e.is_default : e.id === environmentId));
  const teams = chosen?.teams === undefined ? "as the server's default says (ROZ_TEAMS_DEFAULT)" : chosen.teams.enabled ? "on" : "off";
  return (
    <section class="page" aria-labelledby="new-title">
      <div class="page-head">
        <h1 id="new-title">New session</h1>
      </div>
      <form class="card form" onSubmit={start}>
        <label for="env">Environment</label>
        <select id="env" value={environmentId} onChange={(e) => setEnvironmentId(e.currentTarget.value)}>
          {/* The tenant's default is the empty choice: StartSession without an environment id. */}
          {!envs.some((e) => e.is_default) && <option value="">the tenant's default (made for the first session)</option>}
          {[...envs]
            .sort((a, b) => Number(b.is_default) - Number(a.is_default))
            .map((env) => (
              <option value={env.is_default ? "" : env.id}>{env.is_default && env.name !== "default" ? `${env.name} (default)` : env.name}</option>
            ))}
        </select>
        <p class="muted" data-teams={chosen?.teams?.enabled ?? "default"}>
          Team tools (spawn_worker, wait_for_workers): {teams}. The environment decides; <a href={href.environments}>change it under Environments</a>.
        </p>
        <label for="model">Model</label>
        <input
          id="model"
          list="models"
          placeholder="the environment's or the server's default"
          value={model}
          onInput={(e) => setModel(e.currentTarget.value)}
        />
        <datalist id="models">
          {[...new Set([...models, ...envModels])].map((m) => (
            <option value={m} />
          ))}
        </datalist>
        <label for="session-title">Title (optional)</label>
        <input id="session-title" maxLength={256} placeholder="names the session in the list" value={title} onInput={(e) => setTitle(e.currentTarget.value)} />
        <label for="first-message">Message</label>
        <textarea id="first-message" rows={4} required value={message} onInput={(e) => setMessage(e.currentTarget.value)} />
        <label class="check">
          <input type="checkbox" checked={offerTools} onChange={(e) => setOfferTools(e.currentTarget.checked)} />
          Offer the browser tools (current_time, ask_user, fetch_url of {FETCH_ALLOW_LIST.join(", ")})
        </label>
        <button type="submit" disabled={message.trim() === ""}>
          Start
        </button>
      </form>
    </section>
  );
}
