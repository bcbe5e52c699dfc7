import { isLive, rest, restAll, type SessionJson } from "../api/rest.ts";
import { usePoll } from "../components/use-poll.ts";
import { VirtualList } from "../components/virtual-list.tsx";
import { ago, num } from "../format.ts";
import { href } from "../router.ts";

/** How often the list is re-read from REST. */
export const SESSIONS_POLL_MS = 2000;
/** Live sessions whose attached streams are read per poll when the list does not carry them (REST rate limits). */
const DETAILS_PER_POLL = 10;

/**
 * Every session, newest first, with `attached_streams` for live ones: from the list when the
 * server puts it there, else from `GET /v1/sessions/{id}` for the newest few live sessions.
 */
async function loadSessions(): Promise<SessionJson[]> {
  const sessions = await restAll<SessionJson>("/v1/sessions");
  const missing = sessions.filter((s) => isLive(s) && s.attached_streams === undefined).slice(0, DETAILS_PER_POLL);
  const details = await Promise.all(missing.map((s) => rest<SessionJson>("GET", `/v1/sessions/${s.id}`).catch(() => s)));
  const byId = new Map(details.map((d) => [d.id, d]));
  return sessions.map((s) => (byId.has(s.id) ? { ...s, attached_streams: byId.get(s.id)?.attached_streams } : s));
}

function Row({ s }: { s: SessionJson }) {
  return (
    <a class="srow" href={href.session(s.id)} data-session={s.id}>
      <span class={`status ${s.status}`} title={s.end_reason && `ended: ${s.end_reason}`}>
        {s.status}
      </span>
      <span class="mono" title={s.id}>
        {s.id.slice(0, 8)}
      </span>
      <span>{s.model}</span>
      <span class="num">{num(s.turn_count)}</span>
      <span class="num" title={`cache read ${num(s.usage.cache_read_tokens)}`}>
        {num(s.usage.input_tokens + s.usage.output_tokens)}
      </span>
      <span class="num" data-attached={s.attached_streams}>
        {s.attached_streams ?? "–"}
      </span>
      <span title={s.updated_at}>{ago(s.updated_at)}</span>
    </a>
  );
}

/** Every session of the tenant, newest first, re-read every two seconds. */
export function SessionsView() {
  const { value: sessions, error } = usePoll(loadSessions, SESSIONS_POLL_MS);
  return (
    <section aria-labelledby="sessions-title" class="page">
      <div class="page-head">
        <h1 id="sessions-title">Sessions</h1>
        <span class="muted" aria-live="polite">
          {sessions
            ? `${num(sessions.length)} sessions, ${num(sessions.filter((s) => s.status === "active" || s.status === "detached").length)} live`
            : "loading…"}
        </span>
        <a class="button" href={href.newSession}>
          New session
        </a>
      </div>
      {error && (
        <p class="field-error" role="alert">
          {error}
        </p>
      )}
      <div class="srow head" aria-hidden="true">
        <span>status</span>
        <span>id</span>
        <span>model</span>
        <span class="num">turns</span>
        <span class="num">tokens</span>
        <span class="num">attached</span>
        <span>last activity</span>
      </div>
      {sessions && sessions.length === 0 && <p class="muted">No sessions yet. Start one with “New session”.</p>}
      {sessions && sessions.length > 0 && <VirtualList class="sessions" items={sessions} estimate={40} label="Sessions" renderRow={(s) => <Row s={s} />} />}
    </section>
  );
}
