/** The event bus: the `EventBus` contract and its in-memory implementation. */
export type * from "./types.ts";
export { createMemoryBus, type MemoryBusOptions } from "./memory/bus.ts";
export { subjectMatches } from "./subject.ts";
