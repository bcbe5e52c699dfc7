export { AsyncQueue } from "./async-queue.ts";
export { sessionErrorOf } from "./error-codes.ts";
export type * from "./ports.ts";
export { Session } from "./session.ts";
export { SessionRegistry } from "./session-registry.ts";
export { SessionStream, type StreamItem } from "./session-stream.ts";
export { conversationOf } from "./transcript.ts";
export type * from "./types.ts";
export { isUuid } from "./uuid.ts";
