import { restAll, type SessionJson } from "../api/rest.ts";
import { usePoll } from "../components/use-poll.ts";
import { VirtualList } from "../components/virtual-list.tsx";
import { ago, num } from "../format.ts";
import { href } from "../router.ts";

/** How often the list is re-read from REST. */
export const SESSIONS_POLL_MS = 2000;

function Row({ s }: { s: SessionJson }) {
  return (
    <a class="srow" href={href.session(s.id)} data-session={s.id}>
      <span class={`status ${s.status}`}>{s.status}</span>
      <span class="mono" title={s.id}>
        {s.id.slice(0, 8)}
      </span>
      <span>{s.model}</span>
      <span class="num">{num(s.turn_count)}</span>
      <span class="num" title={`cache read ${num(s.usage.cache_read_tokens)}`}>
        {num(s.usage.input_tokens + s.usage.output_tokens)}
      </span>
      <span class="num">{s.attached_streams ?? "–"}</span>
      <span title={s.updated_at}>{ago(s.updated_at)}</span>
    </a>
  );
}

/** Every session of the tenant, newest first, re-read every two seconds. */
export function SessionsView() {
  const { value: sessions, error } = usePoll(() => restAll<SessionJson>("/v1/sessions"), SESSIONS_POLL_MS);
  return (
    <section aria-labelledby="sessions-title" class="page">
      <div class="page-head">
        <h1 id="sessions-title">Sessions</h1>
        <span class="muted" aria-live="polite">
          {sessions ? `${num(sessions.length)} sessions, ${num(sessions.filter((s) => s.status === "active" || s.status === "detached").length)} live` : "loading…"}
        </span>
        <a class="button" href={href.newSession}>
          New session
        </a>
      </div>
      {error && <p class="field-error" role="alert">{error}</p>}
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
