import type { EventBus, Listener, Responder } from "../bus/index.ts";
import { RozError } from "../errors/index.ts";
import {
  type ClusterRequest,
  decodeLine,
  decodeReply,
  decodeRequest,
  encodeLine,
  encodeReply,
  encodeRequest,
  type LineMessage,
  type ReplyTo,
  type RequestKind,
  type RequestOf,
} from "./codec.ts";

/** Answers one kind of request on this node. */
type Handler<K extends RequestKind> = (request: RequestOf<K>) => Promise<ReplyTo<K>>;
export type RequestHandlers = { [K in RequestKind]?: Handler<K> };

/** What a relay's line delivers: the owner's messages in order, with the listener's counts. */
export interface Line extends AsyncIterable<LineMessage> {
  /** Resolves once other nodes' sends reach the line. */
  readonly ready: Promise<void>;
  readonly received: number;
  readonly dropped: number;
  close(): void;
}

/**
 * The one way nodes talk to each other over the bus: typed requests to a node (each node serves
 * `node.<its id>.channel` by request/reply) and one-way lines (`relay.<id>`, never stored) on
 * which an owner streams a relayed session's responses. Every subject is named here, and every
 * message goes through the codec.
 */
export interface NodeChannel {
  readonly nodeId: string;
  /**
   * Asks `node` and resolves with its reply. Rejects as `EventBus.request` does: `unavailable`
   * when nobody answers (with `noResponders` when nobody serves the node), or the handler's error.
   */
  ask<K extends RequestKind>(node: string, request: RequestOf<K>): Promise<ReplyTo<K>>;
  /**
   * Answers these kinds of requests until the returned handle is closed. The node serves its
   * subject while any handlers are registered; a kind nobody registered is answered `unavailable`.
   */
  serve(handlers: RequestHandlers): { close(): void };
  /** Sends one message on a line (at most once: a lost one is noticed by its number). */
  send(lineId: string, message: LineMessage): void;
  /** Listens on a line from now on; up to `maxPending` messages wait for a slow reader, the oldest then dropped. */
  listen(lineId: string, maxPending: number): Line;
}

/** A node id as one subject token. */
const token = (nodeId: string): string => nodeId.replace(/[^A-Za-z0-9_-]/g, "_");
const nodeSubject = (nodeId: string): string => `node.${token(nodeId)}.channel`;
const lineSubject = (lineId: string): string => `relay.${lineId}`;

type AnyHandler = (request: ClusterRequest) => Promise<object>;

export function createNodeChannel(bus: EventBus, nodeId: string): NodeChannel {
  const handlers = new Map<RequestKind, AnyHandler>();
  let responder: Responder | undefined;

  const answer = async (data: Uint8Array): Promise<Uint8Array> => {
    const request = decodeRequest(data);
    const handler = handlers.get(request.kind);
    if (handler === undefined) throw new RozError("unavailable", `node "${nodeId}" does not answer ${request.kind} requests now`);
    return encodeReply(request.kind, (await handler(request)) as ReplyTo<typeof request.kind>);
  };

  return {
    nodeId,
    async ask(node, request) {
      return decodeReply(request.kind, await bus.request(nodeSubject(node), encodeRequest(request)));
    },
    serve(registered) {
      const kinds = Object.keys(registered) as RequestKind[];
      for (const kind of kinds) if (handlers.has(kind)) throw new RozError("conflict", `${kind} requests are already answered`);
      for (const kind of kinds) handlers.set(kind, registered[kind] as AnyHandler);
      responder ??= bus.serve(nodeSubject(nodeId), answer);
      return {
        close() {
          for (const kind of kinds) if (handlers.get(kind) === registered[kind]) handlers.delete(kind);
          if (handlers.size > 0 || responder === undefined) return;
          // Nobody served at all: askers learn at once that this node is gone (no responders).
          responder.close();
          responder = undefined;
        },
      };
    },
    send(lineId, message) {
      bus.send(lineSubject(lineId), encodeLine(message));
    },
    listen(lineId, maxPending) {
      return decodedLine(bus.listen(lineSubject(lineId), { maxPending }));
    },
  };
}

function decodedLine(listener: Listener): Line {
  return {
    ready: listener.ready,
    get received() {
      return listener.received;
    },
    get dropped() {
      return listener.dropped;
    },
    close: () => listener.close(),
    [Symbol.asyncIterator]() {
      const messages = listener[Symbol.asyncIterator]();
      return {
        async next() {
          const next = await messages.next();
          return next.done ? next : { done: false, value: decodeLine(next.value.data) };
        },
        async return() {
          await messages.return?.();
          return { done: true, value: undefined };
        },
      };
    },
  };
}
