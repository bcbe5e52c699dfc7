import { type EventOf, InputState, type JsonObject, type SessionEvent } from "@roz/client";

/**
 * What became of a user message sent while a turn ran: waiting in the queue (`place`), sent
 * to steer or interrupt and not yet taken, steered into the running turn, or dropped.
 */
export type UserStatus = "queued" | "steer" | "interrupt" | "steered" | "dropped";

/** How the composer delivers a message while a turn runs. */
export type Delivery = "queue" | "steer" | "interrupt";

/** One entry of a session's view, built from its responses (and the user's own messages). */
export type Item =
  | { kind: "user"; messageId: string; text: string; status?: UserStatus; place?: number }
  | { kind: "assistant"; messageId: string; text: string; thinking: string }
  | {
      kind: "tool";
      id: string;
      name: string;
      parameters: JsonObject;
      workerId: string;
      state: "requested" | "answered" | "denied";
      result?: string;
      success?: boolean;
      /** The server cut the result it echoed (ROZ_TOOL_RESULT_ECHO_BYTES). */
      truncated?: boolean;
    }
  | {
      kind: "approval";
      id: string;
      toolName: string;
      parameters: JsonObject;
      reason: string;
      timeoutMs: number;
      receivedAt: number;
      state: "pending" | "approved" | "denied" | "resolved";
    }
  | { kind: "turn"; messageId: string; stopReason: string; input: number; output: number; cacheRead: number; cacheCreation: number }
  | { kind: "notice"; text: string; tone: "info" | "error" }
  | { kind: "team"; taskId: string };

/** Everything the view knows about a session: what it drew, up to which seq, and the live state. */
export interface SessionState {
  sessionId: string;
  model: string;
  lastSeq: number;
  items: Item[];
  activity: string;
  turnRunning: boolean;
  ended: boolean;
  /** This tab runs the browser tools it offered (set for sessions it started). */
  answersTools: boolean;
}

export const emptyState = (sessionId = ""): SessionState => ({
  sessionId,
  model: "",
  lastSeq: 0,
  items: [],
  activity: "idle",
  turnRunning: false,
  ended: false,
  answersTools: false,
});

const findLast = <K extends Item["kind"]>(items: Item[], kind: K, match: (i: Extract<Item, { kind: K }>) => boolean): number => {
  for (let i = items.length - 1; i >= 0; i--) {
    const it = items[i] as Item;
    if (it.kind === kind && match(it as Extract<Item, { kind: K }>)) return i;
  }
  return -1;
};

/**
 * The model only goes on once every requested tool has its result, so any delta or the
 * turn's end means open calls were answered (by this console or another one).
 */
const closeOpen = (items: Item[]): Item[] => {
  // A worker's calls belong to its own loop, which the session's deltas say nothing about.
  const open = (it: Item) => it.kind === "tool" && it.state === "requested" && it.workerId === "";
  return items.some(open) ? items.map((it): Item => (open(it) ? { ...(it as Extract<Item, { kind: "tool" }>), state: "answered" } : it)) : items;
};

/** Replaces item `index` by `next` (items are immutable so the view can compare them). */
const replace = (items: Item[], index: number, next: Item): Item[] => items.map((it, i) => (i === index ? next : it));

/** A message typed during a turn that has not joined or started one: the turn's answer goes on above it. */
const waiting = (it: Item): boolean => it.kind === "user" && it.status !== undefined && it.status !== "steered";

function appendDelta(items: Item[], messageId: string, field: "text" | "thinking", content: string): Item[] {
  let at = items.length - 1;
  while (at >= 0 && waiting(items[at] as Item)) at--;
  const last = items[at];
  if (last?.kind === "assistant" && last.messageId === messageId) return replace(items, at, { ...last, [field]: last[field] + content });
  const next: Item = { kind: "assistant", messageId, text: field === "text" ? content : "", thinking: field === "thinking" ? content : "" };
  return [...items.slice(0, at + 1), next, ...items.slice(at + 1)];
}

/** Marks the pending approval for `id` (if any) as settled. */
function settleApproval(items: Item[], id: string, state: "approved" | "denied" | "resolved"): Item[] {
  const i = findLast(items, "approval", (a) => a.id === id && a.state === "pending");
  return i < 0 ? items : replace(items, i, { ...(items[i] as Extract<Item, { kind: "approval" }>), state });
}

/**
 * Applies one event. Events at or below `lastSeq` are ignored, so a replay that overlaps what
 * the view already has never doubles anything.
 */
export function applyEvent(state: SessionState, ev: SessionEvent, now = Date.now()): SessionState {
  if (ev.seq !== 0 && ev.seq <= state.lastSeq) return state;
  const s: SessionState = { ...state, lastSeq: ev.seq || state.lastSeq };
  switch (ev.type) {
    case "session_started":
      return { ...s, sessionId: ev.sessionId, model: ev.model };
    case "text_delta":
      return { ...s, turnRunning: true, items: appendDelta(closeOpen(s.items), ev.messageId, "text", ev.content) };
    case "thinking_delta":
      return { ...s, turnRunning: true, items: appendDelta(closeOpen(s.items), ev.messageId, "thinking", ev.content) };
    case "tool_request": {
      const items = settleApproval(s.items, ev.toolCallId, "approved");
      if (findLast(items, "tool", (t) => t.id === ev.toolCallId) >= 0) return { ...s, items }; // re-sent on re-attach
      return {
        ...s,
        turnRunning: true,
        items: [...items, { kind: "tool", id: ev.toolCallId, name: ev.toolName, parameters: ev.parameters ?? {}, workerId: ev.workerId, state: "requested" }],
      };
    }
    case "tool_denied": {
      const items = settleApproval(s.items, ev.toolCallId, "denied");
      return {
        ...s,
        items: [
          ...items,
          { kind: "tool", id: ev.toolCallId, name: ev.toolName, parameters: {}, workerId: "", state: "denied", result: `${ev.reason}: ${ev.detail}` },
        ],
      };
    }
    case "tool_finished":
      return { ...s, items: finishTool(s.items, ev) };
    case "activity_update": {
      let items = s.items;
      // Servers before ApprovalRequest name only the call (`detail`): the approval is shown without its details.
      const a = ev.approval ?? (ev.detail ? { toolCallId: ev.detail, toolName: "", parameters: {}, reason: "", timeoutMs: 0 } : undefined);
      if (ev.state === "waiting_approval" && a && findLast(items, "approval", (x) => x.id === a.toolCallId) < 0) {
        items = [
          ...items,
          {
            kind: "approval",
            id: a.toolCallId,
            toolName: a.toolName,
            parameters: a.parameters ?? {},
            reason: a.reason,
            timeoutMs: a.timeoutMs,
            receivedAt: now,
            state: "pending",
          },
        ];
      }
      return { ...s, items, activity: ev.state, turnRunning: s.turnRunning || ev.state !== "idle" };
    }
    case "turn_complete": {
      const u = ev.usage;
      let items = closeOpen(s.items).map((it): Item => (it.kind === "approval" && it.state === "pending" ? { ...it, state: "resolved" } : it));
      items = [
        ...items,
        {
          kind: "turn",
          messageId: ev.messageId,
          stopReason: ev.stopReason,
          input: u?.inputTokens ?? 0,
          output: u?.outputTokens ?? 0,
          cacheRead: u?.cacheReadTokens ?? 0,
          cacheCreation: u?.cacheCreationTokens ?? 0,
        },
      ];
      return { ...s, items, turnRunning: false, activity: "idle" };
    }
    case "error":
      return { ...s, items: [...s.items, { kind: "notice", tone: "error", text: `${ev.code}: ${ev.message}` }] };
    case "context_compacted":
      return {
        ...s,
        items: [...s.items, { kind: "notice", tone: "info", text: `context compacted (${ev.level}): ${ev.tokensBefore} → ${ev.tokensAfter} tokens` }],
      };
    case "team_started":
      return { ...s, items: [...s.items, { kind: "team", taskId: ev.taskId }] };
    case "rolled_back": {
      const { turns, remainingTurns } = ev;
      const text = `rolled back ${turns} turn${turns === 1 ? "" : "s"}: the agent no longer sees ${turns === 1 ? "it" : "them"} (${remainingTurns} remain)`;
      return { ...s, items: [...s.items, { kind: "notice", tone: "info", text }] };
    }
    case "input_update":
      return { ...s, items: applyInput(s.items, ev), turnRunning: s.turnRunning || ev.state === InputState.STARTED };
    default:
      return s;
  }
}

/**
 * A call's result, whoever gave it: a server tool (spawn_worker, wait_for_workers) sends no
 * request, so its call appears with its result.
 */
function finishTool(items: Item[], v: EventOf<"tool_finished">): Item[] {
  const i = findLast(items, "tool", (t) => t.id === v.toolCallId);
  const result = { success: v.success, result: v.result, truncated: v.truncated };
  if (i < 0) return [...items, { kind: "tool", id: v.toolCallId, name: v.toolName, parameters: {}, workerId: v.workerId, state: "answered", ...result }];
  return replace(items, i, { ...(items[i] as Extract<Item, { kind: "tool" }>), state: "answered", ...result });
}

type UserItem = Extract<Item, { kind: "user" }>;

/**
 * A message's `InputUpdate`: one that starts a turn or is steered in moves to the end (where its
 * answer follows), with its text (also in a tab that did not send it); one that waits shows its
 * place; one that was dropped says so.
 */
function applyInput(items: Item[], u: EventOf<"input_update">): Item[] {
  const i = findLast(items, "user", (x) => x.messageId === u.messageId);
  const known = i < 0 ? undefined : (items[i] as UserItem);
  const moved = (status?: UserStatus): Item[] => [
    ...items.filter((_, k) => k !== i),
    { kind: "user", messageId: u.messageId, text: u.content || known?.text || "", ...(status ? { status } : {}) },
  ];
  switch (u.state) {
    case InputState.STARTED:
      return moved();
    case InputState.STEERED:
      return moved("steered");
    case InputState.QUEUED:
      return known
        ? replace(items, i, { ...known, status: "queued", place: u.queuePosition })
        : [...items, { kind: "user", messageId: u.messageId, text: "", status: "queued", place: u.queuePosition }];
    case InputState.DROPPED:
      return known ? replace(items, i, { kind: "user", messageId: known.messageId, text: known.text, status: "dropped" }) : items;
    default:
      return items;
  }
}

/**
 * The user's own message, shown at once: as the turn it starts, or, sent with a delivery while
 * a turn runs, as waiting until its `InputUpdate` says what became of it.
 */
export function addUserMessage(s: SessionState, messageId: string, text: string, delivery?: Delivery): SessionState {
  if (delivery === undefined || !s.turnRunning) return { ...s, turnRunning: true, items: [...s.items, { kind: "user", messageId, text }] };
  const status: UserStatus = delivery === "queue" ? "queued" : delivery;
  return { ...s, items: [...s.items, { kind: "user", messageId, text, status }] };
}
