/** Node-to-node work over the bus: one typed request channel, routing to a session's node, and relayed session streams. */
export { createNodeChannel, type NodeChannel } from "./channel.ts";
export { createSessionRelay, type SessionRelay } from "./relay.ts";
export type { ClientRelay } from "./relay-client.ts";
export type { RelayHost } from "./relay-host.ts";
export { createSessionRouting, type SessionRouting } from "./routing.ts";
