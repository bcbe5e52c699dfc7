/**
 * The load generator's client side: connect-node gRPC transports over h2c whose
 * connections the benchmark owns (so it can close them and the process can exit), and a
 * lean StreamSession wrapper without per-message timers in the hot path.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { AgentService, type SessionRequestSchema, type SessionResponse, ToolCategoryHint } from "../src/gen/roz/v1/agent_pb.js";
import { AsyncQueue } from "../src/session/index.ts";

export type SessionRequestInit = MessageInitShape<typeof SessionRequestSchema>;
export type AgentClient = Client<typeof AgentService>;

/** `count` clients, each with its own HTTP/2 connection to `url`; `close()` tears them all down. */
export function connectClients(url: string, count: number): { clients: AgentClient[]; close(): void } {
  const managers = Array.from({ length: count }, () => new Http2SessionManager(url));
  const clients = managers.map((sessionManager) => createClient(AgentService, createGrpcTransport({ baseUrl: url, sessionManager })));
  return {
    clients,
    close: () => {
      for (const m of managers) m.abort();
    },
  };
}

/** One StreamSession call. `next()` resolves undefined once the server ended the stream. */
export interface BenchStream {
  send(request: SessionRequestInit): void;
  next(): Promise<SessionResponse | undefined>;
  /** Half-closes the requests (the server then completes the session). */
  end(): void;
  abort(): void;
  /** The highest seq read so far (what a re-attach resumes after). */
  lastSeq(): bigint;
}

export function openStream(client: AgentClient): BenchStream {
  const requests = new AsyncQueue<SessionRequestInit>();
  const abort = new AbortController();
  const responses = client.streamSession(requests, { signal: abort.signal })[Symbol.asyncIterator]();
  let seen = 0n;
  return {
    send: (request) => requests.push(request),
    next: async () => {
      const r = await responses.next();
      if (r.done) return undefined;
      if (r.value.seq > seen) seen = r.value.seq;
      return r.value;
    },
    end: () => requests.end(),
    abort: () => abort.abort(),
    lastSeq: () => seen,
  };
}

type Case = NonNullable<SessionResponse["response"]["case"]>;
type ValueOf<C extends Case> = Extract<SessionResponse["response"], { case: C }>["value"];

/**
 * Reads until a response of `wanted` arrives and returns its value; an in-band error, a
 * turn that completes first, or the end of the stream throws (so a bench never waits forever).
 */
export async function expect<C extends Case>(stream: BenchStream, wanted: C): Promise<ValueOf<C>> {
  for (;;) {
    const r = await stream.next();
    if (r === undefined) throw new Error(`stream ended while waiting for ${wanted}`);
    if (r.response.case === wanted) return r.response.value as ValueOf<C>;
    if (r.response.case === "error") throw new Error(`server error while waiting for ${wanted}: ${r.response.value.code}: ${r.response.value.message}`);
    if (r.response.case === "turnComplete") throw new Error(`turn completed (${r.response.value.stopReason}) while waiting for ${wanted}`);
  }
}

export const ping: SessionRequestInit = { request: { case: "ping", value: {} } };

/** The client tool the tool benchmarks declare (PURE: allowed without approval). */
export const benchTool = {
  name: "bench_tool",
  description: "does nothing, quickly",
  parametersSchema: { type: "object", properties: { n: { type: "number" } } },
  category: ToolCategoryHint.TOOL_CATEGORY_PURE,
};

/** Opens a stream and starts a session on it; resolves once `session_started` arrived. */
export async function startSession(
  client: AgentClient,
  start: { model?: string; tools?: (typeof benchTool)[] } = {},
): Promise<{ stream: BenchStream; sessionId: string }> {
  const stream = openStream(client);
  stream.send({ request: { case: "start", value: { ...(start.model ? { model: start.model } : {}), tools: start.tools ?? [] } } });
  const started = await expect(stream, "sessionStarted");
  return { stream, sessionId: started.sessionId };
}

export const userMessage = (content: string, messageId?: string): SessionRequestInit => ({
  request: { case: "userMessage", value: { content, ...(messageId ? { messageId } : {}) } },
});

export const toolResult = (toolCallId: string, result: string): SessionRequestInit => ({
  request: { case: "toolResult", value: { toolCallId, success: true, result } },
});

/** Ends a session politely: half-close, then drain whatever the server still sends. */
export async function finish(stream: BenchStream): Promise<void> {
  stream.end();
  try {
    while ((await stream.next()) !== undefined) {
      // drain
    }
  } catch {
    // A stream torn down at close is fine here.
  }
}
