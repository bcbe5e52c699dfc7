import type { SessionResponse, TeamEvent as WireTeamEvent } from "./gen/roz/v1/agent_pb.js";

/** `textDelta` → `text_delta`: the wire's own field names. */
type Snake<S extends string> = S extends `${infer H}${infer T}` ? `${H extends Lowercase<H> ? H : `_${Lowercase<H>}`}${Snake<T>}` : S;
type Plain<T> = Omit<T, "$typeName">;

type Responses = SessionResponse["response"];
/** Stream-local answers (not session events) and the envelope format, which this client never asks for. */
type NotEvents = "keepalive" | "pong" | "sessionEvent";
type EventCase = Exclude<NonNullable<Responses["case"]>, NotEvents>;

/**
 * One event of a session: `type` is the wire's variant name (`text_delta`, `tool_request`,
 * `turn_complete`, `error`, …), `seq` its per-session number, and the variant's fields in
 * camelCase beside them (`{ type: "text_delta", seq: 7, messageId, content }`).
 */
export type SessionEvent = { [C in EventCase]: { type: Snake<C>; seq: number } & Plain<Extract<Responses, { case: C }>["value"]> }[EventCase];
export type SessionEventType = SessionEvent["type"];
/** The event of type `T`. */
export type EventOf<T extends SessionEventType> = Extract<SessionEvent, { type: T }>;

type TeamCase = NonNullable<WireTeamEvent["event"]["case"]>;
/** One event of a team task (`WatchTeam`), numbered task-wide, with the time it happened. */
export type TeamEvent = {
  [C in TeamCase]: { type: Snake<C>; seq: number; time: Date | undefined } & Plain<Extract<WireTeamEvent["event"], { case: C }>["value"]>;
}[TeamCase];

/** Variant names in snake case, worked out once per name (events are many, names few). */
const snakeNames = new Map<string, string>();
function snake(name: string): string {
  let s = snakeNames.get(name);
  if (s === undefined) {
    s = name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    snakeNames.set(name, s);
  }
  return s;
}

/** `{ type, seq, ...value }` without the message's `$typeName`. */
function flat(type: string, seq: number, value: object): Record<string, unknown> {
  const out: Record<string, unknown> = { type, seq };
  for (const key in value) if (key !== "$typeName") out[key] = (value as Record<string, unknown>)[key];
  return out;
}

/** The event a response carries, or undefined for stream-local ones (pong, keepalive) and unknown variants. */
export function eventOf(response: SessionResponse): SessionEvent | undefined {
  const r = response.response;
  if (r.case === undefined || r.case === "keepalive" || r.case === "pong" || r.case === "sessionEvent") return undefined;
  return flat(snake(r.case), Number(response.seq), r.value) as SessionEvent;
}

/** A TeamEvent of the wire as the library reports it (undefined for a variant this client does not know). */
export function teamEventOf(e: WireTeamEvent): TeamEvent | undefined {
  if (e.event.case === undefined) return undefined;
  const time = e.time ? new Date(Number(e.time.seconds) * 1000 + Math.floor(e.time.nanos / 1e6)) : undefined;
  return { ...flat(snake(e.event.case), Number(e.seq), e.event.value), time } as TeamEvent;
}
