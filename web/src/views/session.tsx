import { useEffect, useMemo, useState } from "preact/hooks";
import { isLive, rest, type SessionJson, type TurnJson } from "../api/rest.ts";
import type { AgentClient } from "../api/rpc.ts";
import { ConfirmButton } from "../components/confirm-button.tsx";
import { VirtualList } from "../components/virtual-list.tsx";
import { num, tokens } from "../format.ts";
import { LiveSession } from "../session/live-session.ts";
import { transcriptItems, withUserMessages } from "../session/transcript.ts";
import type { Delivery, Item } from "../session/timeline.ts";
import { SessionHeading } from "./session-heading.tsx";
import { TimelineItem } from "./timeline-item.tsx";

/** A LiveSession's state as render input: re-renders on every change. */
export function useLive(live: LiveSession | undefined): void {
  const [, setTick] = useState(0);
  useEffect(() => live?.subscribe(() => setTick((t) => t + 1)), [live]);
}

export function Timeline({ items, live, sessionId }: { items: readonly Item[]; live?: LiveSession | undefined; sessionId?: string | undefined }) {
  return (
    <VirtualList
      class="timeline"
      items={items}
      estimate={64}
      stickToBottom
      label="Transcript"
      renderRow={(item) => <TimelineItem item={item} live={live} sessionId={sessionId} />}
    />
  );
}

const statusText: Record<LiveSession["status"], string> = {
  connecting: "connecting…",
  live: "live",
  reconnecting: "reconnecting…",
  ended: "ended",
  unsupported: "not attached",
  failed: "attach failed",
};

/** A live session: its stream, and the controls to talk to it. */
export function LivePane({ live, stored = [] }: { live: LiveSession; stored?: readonly TurnJson[] }) {
  useLive(live);
  const [text, setText] = useState("");
  const s = live.state;
  const canSend = live.status === "live" && !s.ended && s.sessionId !== "";
  // While a turn runs the message box stays usable: a message is queued, steered into the turn, or interrupts it.
  const send = (e: Event, delivery?: Delivery) => {
    e.preventDefault();
    if (text.trim() === "") return;
    void live.sendMessage(text, s.turnRunning ? (delivery ?? "queue") : undefined).catch(() => undefined);
    setText("");
  };
  const empty = !canSend || text.trim() === "";
  // A fork's copied turns have no events of their own: they are drawn from its stored transcript.
  const copied = useMemo(() => transcriptItems(stored.filter((t) => t.forked_from)), [stored]);
  return (
    <div class="live">
      <div class="live-head" role="status" aria-live="polite">
        <span class={`badge link-${live.status}`} data-link={live.status}>
          {statusText[live.status]}
        </span>
        {s.model && <span class="muted">{s.model}</span>}
        <span class="muted" data-activity={s.activity}>
          {s.turnRunning ? s.activity : "idle"}
        </span>
        <span class="muted">seq {num(s.lastSeq)}</span>
        {live.detail && live.status !== "live" && <span class="muted">{live.detail}</span>}
      </div>
      <Timeline items={[...copied, ...withUserMessages(s.items, stored)]} live={live} sessionId={s.sessionId || undefined} />
      <form class="composer" onSubmit={send}>
        <label for="message" class="sr-only">
          Message
        </label>
        <textarea
          id="message"
          rows={2}
          placeholder={
            canSend
              ? s.turnRunning
                ? "Write while it works: Queue, Steer or Interrupt (Ctrl+Enter queues)"
                : "Write a message (Ctrl+Enter sends)"
              : "not attached"
          }
          value={text}
          disabled={!canSend}
          onInput={(e) => setText(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) send(e);
          }}
        />
        <div class="buttons">
          {s.turnRunning ? (
            <>
              <button type="submit" disabled={empty} title="Runs as its own turn when the running one has ended">
                Queue
              </button>
              <button type="button" disabled={empty} title="Joins the running turn: the agent sees it at its next step" onClick={(e) => send(e, "steer")}>
                Steer
              </button>
              <button type="button" disabled={empty} title="Cancels the running turn and runs this next" onClick={(e) => send(e, "interrupt")}>
                Interrupt
              </button>
            </>
          ) : (
            <button type="submit" disabled={empty}>
              Send
            </button>
          )}
          <button type="button" disabled={!canSend || !s.turnRunning} onClick={() => void live.cancelTurn().catch(() => undefined)}>
            Cancel turn
          </button>
          <button
            type="button"
            disabled={!canSend || s.turnRunning}
            title="The agent no longer sees the last turn; the transcript keeps it, marked"
            onClick={() => void live.rollback().catch(() => undefined)}
          >
            Roll back last turn
          </button>
          <ConfirmButton
            class="danger"
            label="End session"
            question="End the session? A running turn is cancelled; the transcript stays."
            confirm="Yes, end it"
            disabled={!canSend}
            onConfirm={() => void live.endSession().catch(() => undefined)}
          />
        </div>
      </form>
    </div>
  );
}

/** How often the header asks REST again while nothing else changed (another client attached, say). */
const HEADER_REFRESH_MS = 10_000;

/**
 * Keeps the header's REST figures (status, turns, attached streams) true while the session is
 * live: asked again when the link's status changes (after a reload the stream re-attaches, and
 * REST then counts it), when a turn ends or the session ends, and every HEADER_REFRESH_MS.
 */
function useSessionHeader(id: string, live: LiveSession | undefined, set: (s: SessionJson) => void): void {
  useEffect(() => {
    if (!live) return undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const refresh = () => {
      clearTimeout(timer);
      timer = setTimeout(() => void rest<SessionJson>("GET", `/v1/sessions/${encodeURIComponent(id)}`).then(set, () => undefined), 200);
    };
    const shape = () => `${live.status} ${live.state.ended} ${live.state.items.filter((i) => i.kind === "turn").length}`;
    let last = shape();
    const unsubscribe = live.subscribe(() => {
      const now = shape();
      if (now !== last) refresh();
      last = now;
    });
    const poll = setInterval(refresh, HEADER_REFRESH_MS);
    return () => {
      unsubscribe();
      clearTimeout(timer);
      clearInterval(poll);
    };
  }, [id, live]);
}

/**
 * One session: a live one is attached (its view rebuilt from its responses, from the seq this
 * tab saw last); an ended one, or one this server cannot attach, shows its stored transcript.
 */
export function SessionView({ id, client }: { id: string; client: AgentClient }) {
  const [session, setSession] = useState<SessionJson | undefined>();
  const [turns, setTurns] = useState<TurnJson[] | undefined>();
  const [error, setError] = useState("");
  const [live, setLive] = useState<LiveSession | undefined>();
  useLive(live);
  useSessionHeader(id, live, setSession);

  useEffect(() => {
    let current: LiveSession | undefined;
    void (async () => {
      try {
        const s = await rest<SessionJson>("GET", `/v1/sessions/${encodeURIComponent(id)}`);
        setSession(s);
        if (isLive(s)) {
          current = new LiveSession(client, {
            sessionId: id,
            onExpired: async () => {
              const [now, stored] = await Promise.all([
                rest<SessionJson>("GET", `/v1/sessions/${encodeURIComponent(id)}`),
                rest<{ turns: TurnJson[] }>("GET", `/v1/sessions/${encodeURIComponent(id)}/messages?format=turns`),
              ]);
              return now.last_seq === undefined ? undefined : { lastSeq: now.last_seq, items: transcriptItems(stored.turns) };
            },
          });
          setLive(current);
          void current.run();
        }
        const t = await rest<{ turns: TurnJson[] }>("GET", `/v1/sessions/${encodeURIComponent(id)}/messages?format=turns`);
        setTurns(t.turns);
      } catch (err) {
        setError((err as Error).message);
      }
    })();
    return () => current?.close();
  }, [id]);

  const storedItems = useMemo(() => (turns ? transcriptItems(turns) : undefined), [turns]);
  const attached = live && live.status !== "unsupported" && live.status !== "failed";
  return (
    <section class="page" aria-labelledby="session-title">
      <div class="page-head">
        <SessionHeading headingId="session-title" id={id} title={session?.title} />
        {session && (
          <span class="muted" data-session-head data-status={session.status} data-turns={session.turn_count} data-attached={session.attached_streams}>
            <span class={`status ${session.status}`}>{session.status}</span>
            {session.end_reason && ` (${session.end_reason})`} · {session.model} · {num(session.turn_count)} turns · {tokens(session.usage)}
            {session.attached_streams !== undefined && ` · ${session.attached_streams} attached`}
          </span>
        )}
      </div>
      {error && (
        <p class="field-error" role="alert">
          {error}
        </p>
      )}
      {live && live.status === "unsupported" && (
        <p class="notice" role="status">
          {live.detail}
        </p>
      )}
      {attached ? <LivePane live={live} stored={turns} /> : storedItems && <Timeline items={storedItems} sessionId={id} />}
    </section>
  );
}
