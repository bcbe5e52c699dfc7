/**
 * Which messages of which calls carry tools lists: the decision of what the screen reads. A
 * start, user_message or register_tools carries them, in StreamSession's `SessionRequest`s,
 * SendToSession's `request` (a SessionRequest one level down) and AttachSession's `start`.
 */
import type { DescField } from "@bufbuild/protobuf";
import {
  AgentService,
  AttachSessionRequestSchema,
  RegisterToolsSchema,
  SendToSessionRequestSchema,
  SessionRequestSchema,
  StartSessionSchema,
  UserMessageSchema,
} from "../../gen/roz/v1/agent_pb.js";

/** A field whose message carries tools: the `tools` field of that message, or carriers one level further down. */
export type Carrier = { field: DescField; tools: DescField } | { field: DescField; within: readonly Carrier[] };

/** SessionRequest: its start, user_message and register_tools. */
const SESSION_REQUEST: readonly Carrier[] = [
  { field: SessionRequestSchema.field.start, tools: StartSessionSchema.field.tools },
  { field: SessionRequestSchema.field.userMessage, tools: UserMessageSchema.field.tools },
  { field: SessionRequestSchema.field.registerTools, tools: RegisterToolsSchema.field.tools },
];

/**
 * The binary form of carriers: field number → the number of the `tools` field in that field's
 * message, or the shape one level further down; and, per field number, the carriers it
 * discards as a rival member of their oneof.
 */
export interface Shape {
  carried: Map<number, number | Shape>;
  discards: Map<number, number[]>;
}

function shapeOf(carriers: readonly Carrier[]): Shape {
  const shape: Shape = { carried: new Map(), discards: new Map() };
  for (const carrier of carriers) {
    shape.carried.set(carrier.field.number, "within" in carrier ? shapeOf(carrier.within) : carrier.tools.number);
    for (const rival of carrier.field.oneof?.fields ?? []) {
      if (rival.number === carrier.field.number) continue;
      shape.discards.set(rival.number, [...(shape.discards.get(rival.number) ?? []), carrier.field.number]);
    }
  }
  return shape;
}

/** The names a JSON message may use for a field (its JSON name, or its name in the .proto). */
export const namesOf = (field: DescField): string[] => [...new Set([field.jsonName, field.name])];

/** A screened request's carriers, and their binary form. */
export interface Screened {
  carriers: readonly Carrier[];
  shape: Shape;
}

const screened = (carriers: readonly Carrier[]): Screened => ({ carriers, shape: shapeOf(carriers) });

/** A StreamSession request. */
export const SESSION_REQUEST_SCREENED = screened(SESSION_REQUEST);

const methodPath = (name: string): string => `/${AgentService.typeName}/${name}`;

/** What the request of each method whose requests can carry tools carries, by HTTP path. */
const SCREENED_OF_PATH = new Map<string, Screened>([
  [methodPath(AgentService.method.streamSession.name), SESSION_REQUEST_SCREENED],
  [methodPath(AgentService.method.sendToSession.name), screened([{ field: SendToSessionRequestSchema.field.request, within: SESSION_REQUEST }])],
  [methodPath(AgentService.method.attachSession.name), screened([{ field: AttachSessionRequestSchema.field.start, tools: StartSessionSchema.field.tools }])],
]);

/** A call without tools lists: its JSON messages are screened for their depth only. */
const DEPTH_ONLY = screened([]);

/** An RPC's route (`/package.Service/Method`), not a REST one. */
const RPC_PATH = /^\/\w+(\.\w+)+\/\w+$/;

/**
 * What the call at `path` screens: its tools lists (for the calls that carry tools), its depth
 * only (any other RPC's JSON messages), or nothing.
 */
export function screenedOf(path: string, json: boolean): Screened | undefined {
  return SCREENED_OF_PATH.get(path) ?? (json && RPC_PATH.test(path) ? DEPTH_ONLY : undefined);
}
