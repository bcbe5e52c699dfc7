import { fromBinary } from "@bufbuild/protobuf";
import type { RozError } from "../errors/index.ts";
import type { Principal } from "../session/index.ts";
import { type SessionResponse, SessionResponseSchema } from "../gen/roz/v1/agent_pb.js";
import type { EventFormat } from "./event-format.ts";
import { preEncoded } from "./response-writer.ts";

/**
 * A session stream relayed from the node that owns the session (session-behaviour.md §10).
 * The node-to-node relay (src/cluster) provides it and the composition root passes it in;
 * requests and responses cross it as protobuf bytes.
 */
export interface RelayedStream {
  readonly sessionId: string;
  /** The highest event seq relayed so far (at first the `afterSeq` it was opened with): where a re-attach goes on. */
  readonly lastSeq: number;
  /** The owner's responses in order, each decoded by `decode`; ends when the owner's stream ends, throws its fatal error. */
  responses<T>(decode: (bytes: Uint8Array) => T): AsyncGenerator<T>;
  /**
   * Hands one client request to the owner's stream; resolves with true once the owner handled
   * it, false when it could not be delivered (the relay has ended: its responses throw why).
   */
  forward(request: Uint8Array): Promise<boolean>;
  /** The client half-closed (false: not delivered, as for `forward`). */
  requestsEnded(): Promise<boolean>;
  /** The client went away. */
  transportBroken(): void;
  /** Ends the relayed stream with `error` (revoked credentials): the owner reports it and ends (false: not delivered). */
  fail(error: RozError): Promise<boolean>;
}

/** What src/rpc uses of the relay between nodes. */
export interface RelayPort {
  /** Opens a relayed stream on `ownerNode`, resuming `sessionId` after `afterSeq`. */
  open(ownerNode: string, principal: Principal, sessionId: string, afterSeq: number, format: EventFormat): Promise<RelayedStream>;
  /** Delivers one request to a session `ownerNode` runs; resolves with the session's last seq once accepted. */
  deliver(ownerNode: string, principal: Principal, sessionId: string, request: Uint8Array): Promise<number>;
  /** True once this node is shutting down: its clients are going elsewhere, nothing is moved here. */
  readonly shuttingDown: boolean;
}

/** How a relayed response's bytes become the call's response: decoded for JSON calls, else passed on as they are. */
export const relayedResponse = (json: boolean): ((bytes: Uint8Array) => SessionResponse) =>
  json ? (bytes) => fromBinary(SessionResponseSchema, bytes) : preEncoded;
