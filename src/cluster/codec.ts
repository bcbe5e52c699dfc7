import { isReason, type Reason, RozError } from "../errors/index.ts";
import type { Principal } from "../session/index.ts";

/**
 * The messages nodes exchange, each kind with its fields. The tables below are the one
 * definition: the TypeScript types are derived from them and `decode` checks every field
 * against them, so a message is either what its type says or refused with `invalid_argument`.
 *
 * A message travels as one frame: a 4-byte big-endian length, that many bytes of JSON with
 * every field but the bytes one, then the bytes field (a session request or response, as the
 * protobuf bytes src/rpc made) as it is.
 */
interface FieldTypes {
  string: string;
  number: number;
  strings: string[];
  /** Per item a count, or null when there is none. */
  counts: (number | null)[];
  principal: Principal;
  /** A RozError reason (an unknown one reads as `unavailable`). */
  reason: Reason;
  /** At most one per message: the frame's tail. */
  bytes: Uint8Array;
}
type Shape = Readonly<Record<string, keyof FieldTypes>>;
type Fields<S extends Shape> = { -readonly [F in keyof S]: FieldTypes[S[F]] };
type Messages<T extends Readonly<Record<string, Shape>>> = { [K in keyof T & string]: { kind: K } & Fields<T[K]> }[keyof T & string];

/** Requests one node asks another on the node's channel. */
const requests = {
  /** End a live session of the asked node (REST DELETE received elsewhere). */
  "end-session": { tenantId: "string", sessionId: "string", reason: "string" },
  /** Hand one request to a live session of the asked node (SendToSession received elsewhere). */
  deliver: { principal: "principal", sessionId: "string", request: "bytes" },
  /** Roll back the last turns of a live session of the asked node (REST received elsewhere). */
  rollback: { principal: "principal", sessionId: "string", turns: "number" },
  /** Host a stream of `sessionId` for a client of the asking node; responses go on the relay's line. */
  "relay-open": { relayId: "string", principal: "principal", sessionId: "string", afterSeq: "number", format: "string" },
  /** One client request for a hosted stream. */
  "relay-request": { relayId: "string", request: "bytes" },
  /** The client half-closed. */
  "relay-closed": { relayId: "string" },
  /** The client went away. */
  "relay-broken": { relayId: "string" },
  /** End the hosted stream with this error (revoked credentials). */
  "relay-fail": { relayId: "string", reason: "reason", message: "string" },
  /** These relays are still wanted. */
  "relay-keep": { relayIds: "strings" },
} as const satisfies Record<string, Shape>;

/** What each request is answered with (the asker knows the kind, so replies carry none). */
const replies = {
  "end-session": {},
  deliver: { lastSeq: "number" },
  rollback: { turns: "number", remainingTurns: "number" },
  "relay-open": {},
  "relay-request": {},
  "relay-closed": {},
  "relay-broken": {},
  "relay-fail": {},
  /** Per asked relay, in order: the messages sent on its line so far, or null when it is not hosted. */
  "relay-keep": { sent: "counts" },
} as const satisfies { [K in keyof typeof requests]: Shape };

/** What the owner sends on a relay's line, each numbered (`n`, from 1) so that a lost one is noticed. */
const lineMessages = {
  /** One response; `seq` is the seq of the event it carries (0: none). */
  response: { n: "number", seq: "number", data: "bytes" },
  /** The hosted stream ended. */
  end: { n: "number" },
  /** The hosted stream ended with this error. */
  error: { n: "number", reason: "reason", message: "string" },
} as const satisfies Record<string, Shape>;

export type ClusterRequest = Messages<typeof requests>;
export type RequestKind = ClusterRequest["kind"];
export type RequestOf<K extends RequestKind> = Extract<ClusterRequest, { kind: K }>;
export type ReplyTo<K extends RequestKind> = Fields<(typeof replies)[K]>;
export type LineMessage = Messages<typeof lineMessages>;

const EMPTY: Uint8Array = new Uint8Array(0);
const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

const invalid = (what: string): RozError => new RozError("invalid_argument", `malformed cluster message: ${what}`);
const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
const isCount = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value);

function principalOf(value: unknown): Principal | undefined {
  if (!isRecord(value)) return undefined;
  const { tenantId, scopes, keyId } = value;
  if (typeof tenantId !== "string" || tenantId === "" || !Array.isArray(scopes) || !scopes.every((s) => typeof s === "string")) return undefined;
  if (keyId !== undefined && typeof keyId !== "string") return undefined;
  return { tenantId, scopes, ...(keyId ? { keyId } : {}) };
}

/** The field's value as its type says, or undefined when it is not one. */
const readers: { [T in Exclude<keyof FieldTypes, "bytes">]: (value: unknown) => FieldTypes[T] | undefined } = {
  string: (v) => (typeof v === "string" ? v : undefined),
  number: (v) => (isCount(v) ? v : undefined),
  strings: (v) => (Array.isArray(v) && v.every((s) => typeof s === "string") ? v : undefined),
  counts: (v) => (Array.isArray(v) && v.every((n) => n === null || isCount(n)) ? v : undefined),
  principal: principalOf,
  reason: (v) => (typeof v === "string" ? (isReason(v) ? v : "unavailable") : undefined),
};

function encode(shape: Shape, message: object): Uint8Array {
  let payload = EMPTY;
  const head = textEncoder.encode(
    JSON.stringify(message, (key, value: unknown) => {
      if (key === "" || shape[key] !== "bytes") return value;
      payload = value as Uint8Array;
      return undefined;
    }),
  );
  const frame = new Uint8Array(4 + head.length + payload.length);
  new DataView(frame.buffer).setUint32(0, head.length);
  frame.set(head, 4);
  frame.set(payload, 4 + head.length);
  return frame;
}

/** A frame's JSON fields and its bytes tail. */
function readFrame(frame: Uint8Array): { fields: Record<string, unknown>; tail: Uint8Array } {
  if (frame.length < 4) throw invalid("too short");
  const length = new DataView(frame.buffer, frame.byteOffset, frame.byteLength).getUint32(0);
  if (4 + length > frame.length) throw invalid("cut short");
  let fields: unknown;
  try {
    fields = JSON.parse(textDecoder.decode(frame.subarray(4, 4 + length)));
  } catch {
    throw invalid("not JSON");
  }
  if (!isRecord(fields)) throw invalid("not an object");
  return { fields, tail: frame.subarray(4 + length) };
}

/** Checks every field of `shape` in place (the bytes one is the tail). */
function checkFields<T>(fields: Record<string, unknown>, tail: Uint8Array, shape: Shape, what: string): T {
  for (const [name, type] of Object.entries(shape)) {
    const value = type === "bytes" ? tail : readers[type](fields[name]);
    if (value === undefined) throw invalid(`${what} needs "${name}" (${type})`);
    fields[name] = value;
  }
  return fields as T;
}

function decodeKind<T>(frame: Uint8Array, shapes: Readonly<Record<string, Shape>>, what: string): T {
  const { fields, tail } = readFrame(frame);
  const kind = fields["kind"];
  if (typeof kind !== "string" || !Object.hasOwn(shapes, kind)) throw invalid(`unknown ${what} "${String(kind)}"`);
  return checkFields<T>(fields, tail, shapes[kind]!, kind);
}

export const encodeRequest = (request: ClusterRequest): Uint8Array => encode(requests[request.kind], request);
export const decodeRequest = (frame: Uint8Array): ClusterRequest => decodeKind(frame, requests, "request");

export const encodeReply = <K extends RequestKind>(kind: K, reply: ReplyTo<K>): Uint8Array => encode(replies[kind], reply);
export function decodeReply<K extends RequestKind>(kind: K, frame: Uint8Array): ReplyTo<K> {
  const { fields, tail } = readFrame(frame);
  return checkFields(fields, tail, replies[kind], `the reply to ${kind}`);
}

export const encodeLine = (message: LineMessage): Uint8Array => encode(lineMessages[message.kind], message);
export const decodeLine = (frame: Uint8Array): LineMessage => decodeKind(frame, lineMessages, "line message");

/** The error a message carries (`relay-fail`, a line's `error`). */
export const errorOf = (message: { reason: Reason; message: string }): RozError =>
  new RozError(message.reason, message.message || "the session's node ended the relayed stream");
