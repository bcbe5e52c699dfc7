import { useEffect, useState } from "preact/hooks";
import type { LiveSession } from "../session/live-session.ts";
import type { Item, UserStatus } from "../session/timeline.ts";
import { json, num } from "../format.ts";
import { href } from "../router.ts";
import { forkThrough } from "../session/fork.ts";

const userStatusText = (status: UserStatus, place: number | undefined): string =>
  ({
    queued: place ? `queued #${place}` : "queued",
    steer: "steering…",
    interrupt: "interrupting…",
    steered: "steered into the turn",
    dropped: "dropped",
  })[status];

function Thinking({ text }: { text: string }) {
  const [open, setOpen] = useState(false);
  return (
    <details class="thinking" open={open} onToggle={(e) => setOpen((e.currentTarget as HTMLDetailsElement).open)}>
      <summary>Thinking ({num(text.length)} chars)</summary>
      <pre>{text}</pre>
    </details>
  );
}

/** Seconds left of an approval's timeout, ticking. */
function TimeLeft({ receivedAt, timeoutMs }: { receivedAt: number; timeoutMs: number }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const left = Math.max(0, Math.round((receivedAt + timeoutMs - now) / 1000));
  return <span class="time-left">{left} s left</span>;
}

function Approval({ item, live }: { item: Extract<Item, { kind: "approval" }>; live: LiveSession | undefined }) {
  const [busy, setBusy] = useState(false);
  const decide = (approved: boolean) => {
    setBusy(true);
    void live?.decide(item.id, approved).catch(() => setBusy(false));
  };
  return (
    // biome-ignore lint/a11y/useSemanticElements: a card of its own, not a form's fieldset
    <div class={`card approval ${item.state}`} role="group" aria-label={`Approval for ${item.toolName}`} data-approval={item.id}>
      <div class="row">
        <strong>Approval needed: {item.toolName || `call ${item.id}`}</strong>
        {item.state !== "pending" ? (
          <span class="badge">{item.state}</span>
        ) : (
          item.timeoutMs > 0 && <TimeLeft receivedAt={item.receivedAt} timeoutMs={item.timeoutMs} />
        )}
      </div>
      {item.reason && <p class="reason">{item.reason}</p>}
      <pre class="args">{json(item.parameters)}</pre>
      {item.state === "pending" && live && (
        <div class="row">
          <button type="button" disabled={busy} onClick={() => decide(true)}>
            Approve
          </button>
          <button type="button" class="danger" disabled={busy} onClick={() => decide(false)}>
            Deny
          </button>
        </div>
      )}
    </div>
  );
}

function AskUser({ live, toolCallId, question }: { live: LiveSession; toolCallId: string; question: string }) {
  const [answer, setAnswer] = useState("");
  return (
    <form
      class="ask"
      onSubmit={(e) => {
        e.preventDefault();
        live.answer(toolCallId, answer);
      }}
    >
      <label for={`ask-${toolCallId}`}>{question}</label>
      <input id={`ask-${toolCallId}`} value={answer} onInput={(e) => setAnswer(e.currentTarget.value)} />
      <button type="submit">Answer</button>
    </form>
  );
}

/** One entry of a transcript or a live session. */
/** Opens a new session holding this conversation up to and including this turn. */
function ForkButton({ sessionId, messageId }: { sessionId: string; messageId: string }) {
  const [error, setError] = useState("");
  const fork = () =>
    forkThrough(sessionId, messageId).then(
      (id) => {
        location.hash = href.session(id);
      },
      (err: unknown) => setError((err as Error).message),
    );
  return (
    <>
      <button type="button" class="link" title="A new session with the conversation up to here" onClick={() => void fork()}>
        Fork from here
      </button>
      {error && <span class="field-error">{error}</span>}
    </>
  );
}

export function TimelineItem({ item, live, sessionId }: { item: Item; live?: LiveSession | undefined; sessionId?: string | undefined }) {
  switch (item.kind) {
    case "user":
      return (
        <div class={`msg user${item.status ? ` ${item.status}` : ""}`} data-status={item.status}>
          <span class="who">you</span>
          {item.status && <span class="badge input-status">{userStatusText(item.status, item.place)}</span>}
          <div class="text">{item.text || "(a message another client sent)"}</div>
        </div>
      );
    case "assistant":
      return (
        <div class="msg assistant" data-message={item.messageId}>
          <span class="who">agent</span>
          {item.thinking && <Thinking text={item.thinking} />}
          <div class="text">{item.text}</div>
        </div>
      );
    case "tool": {
      const question = live?.questions.find((q) => q.toolCallId === item.id);
      return (
        <div class={`card tool ${item.state}`} data-tool={item.name}>
          <div class="row">
            <strong>
              tool {item.name}
              {item.workerId && <span class="muted"> (worker {item.workerId.slice(0, 8)})</span>}
            </strong>
            <span class="badge">{item.state === "answered" && item.success === false ? "failed" : item.state}</span>
          </div>
          <pre class="args">{json(item.parameters)}</pre>
          {question && live && <AskUser live={live} toolCallId={item.id} question={question.question} />}
          {item.result !== undefined && <pre class="result">{item.result}</pre>}
          {item.truncated && <p class="muted">The result is longer: the server sent the first part only.</p>}
        </div>
      );
    }
    case "approval":
      return <Approval item={item} live={live} />;
    case "turn":
      return (
        <div class="turn-end" data-stop={item.stopReason}>
          turn complete · {item.stopReason} · {num(item.input)} in / {num(item.output)} out
          {item.cacheRead > 0 && ` · ${num(item.cacheRead)} from cache`}
          {sessionId && <ForkButton sessionId={sessionId} messageId={item.messageId} />}
        </div>
      );
    case "notice":
      return (
        <p class={`notice ${item.tone}`} role={item.tone === "error" ? "alert" : undefined}>
          {item.text}
        </p>
      );
    case "team":
      return (
        <p class="notice info">
          The agent started a team: <a href={href.teams(item.taskId)}>watch task {item.taskId.slice(0, 8)}</a>
        </p>
      );
  }
}
