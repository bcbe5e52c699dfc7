/** The event bus: the `EventBus` contract, its in-memory implementation and the NATS JetStream one. */
export type * from "./types.ts";
export { isNoResponders } from "./types.ts";
export { createMemoryBus, type MemoryBusOptions } from "./memory/bus.ts";
export { subjectMatches } from "./subject.ts";
export { createNatsBus, type NatsBus, type NatsBusOptions } from "./nats/bus.ts";
