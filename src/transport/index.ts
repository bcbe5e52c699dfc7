/**
 * The one port: HTTP/2 (h2c prior knowledge or TLS with ALPN) and HTTP/1.1 on one listening
 * socket, with the guards that sit at the edge (admission, handshake and header timeouts,
 * the rapid-reset guard, per-turn stream dispatch) and the drain at shutdown. It knows
 * nothing of sessions or RPCs: what it asks of them comes in as callbacks (`answerEarly`).
 */
export type { EarlyAnswer, OnePortOptions } from "./options.ts";
export { OnePortServer } from "./one-port-server.ts";
export { pingRoundTrip } from "./ping-round-trip.ts";
