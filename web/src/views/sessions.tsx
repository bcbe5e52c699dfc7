import { useState } from "preact/hooks";
import { isLive, rest, restAll, type SessionJson } from "../api/rest.ts";
import { usePoll } from "../components/use-poll.ts";
import { VirtualList } from "../components/virtual-list.tsx";
import { num } from "../format.ts";
import { href } from "../router.ts";
import { FilterBar, filterQuery, noFilters } from "./session-filters.tsx";
import { SessionRow } from "./session-row.tsx";

/** How often the list is re-read from REST. */
export const SESSIONS_POLL_MS = 2000;
/** Live sessions whose attached streams are read per poll when the list does not carry them (REST rate limits). */
const DETAILS_PER_POLL = 10;

/**
 * The sessions that match `query` (filters and search), newest first, with `attached_streams`
 * for live ones: from the list when the server puts it there, else from
 * `GET /v1/sessions/{id}` for the newest few live sessions.
 */
async function loadSessions(query: string): Promise<SessionJson[]> {
  const sessions = await restAll<SessionJson>(`/v1/sessions${query}`);
  const missing = sessions.filter((s) => isLive(s) && s.attached_streams === undefined).slice(0, DETAILS_PER_POLL);
  const details = await Promise.all(missing.map((s) => rest<SessionJson>("GET", `/v1/sessions/${s.id}`).catch(() => s)));
  const byId = new Map(details.map((d) => [d.id, d]));
  return sessions.map((s) => (byId.has(s.id) ? { ...s, attached_streams: byId.get(s.id)?.attached_streams } : s));
}

/** The tenant's sessions, newest first, searched and filtered, re-read every two seconds. */
export function SessionsView() {
  const [filters, setFilters] = useState(noFilters);
  const query = filterQuery(filters);
  const { value: sessions, error, reload } = usePoll(() => loadSessions(query), SESSIONS_POLL_MS, [query]);
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
      <FilterBar filters={filters} onChange={setFilters} />
      {error && (
        <p class="field-error" role="alert">
          {error}
        </p>
      )}
      <div class="srow-wrap head" aria-hidden="true">
        <div class="srow head">
          <span>status</span>
          <span>id</span>
          <span>title</span>
          <span>model</span>
          <span class="num">turns</span>
          <span class="num">tokens</span>
          <span class="num">attached</span>
          <span class="num">last activity</span>
        </div>
        <span class="srow-actions" />
      </div>
      {sessions && sessions.length === 0 && <p class="muted">{query === "" ? "No sessions yet. Start one with “New session”." : "No sessions match."}</p>}
      {sessions && sessions.length > 0 && (
        <VirtualList class="sessions" items={sessions} estimate={40} label="Sessions" renderRow={(s) => <SessionRow s={s} changed={reload} />} />
      )}
    </section>
  );
}
