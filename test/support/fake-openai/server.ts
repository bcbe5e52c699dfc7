/**
 * A fake OpenAI-compatible HTTP server for tests and benchmarks: plain `node:http` on
 * 127.0.0.1, speaking the real SSE wire formats of Chat Completions
 * (`POST /v1/chat/completions`, `data: {…}` chunks, `data: [DONE]`), Responses
 * (`POST /v1/responses`, `event: <type>` + `data: {…}`) and Anthropic Messages
 * (`POST /v1/messages`, see test/support/fake-anthropic), scripted per test with a queue
 * of planned replies (see reply.ts). It records every request and whether the client
 * aborted it, so tests can assert that a cancel really reached the provider.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import { messagesFrames } from "../fake-anthropic/messages-frames.ts";
import { messagesRequestProblem } from "../fake-anthropic/validate.ts";
import { chatFrames } from "./chat-frames.ts";
import type { FakeReply } from "./reply.ts";
import { responsesFrames } from "./responses-frames.ts";
import { chatRequestProblem, responsesRequestProblem } from "./validate.ts";

export interface RecordedRequest {
  method: string;
  /** Path without the query, e.g. `/v1/chat/completions`. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (undefined when there was none or it was not JSON). */
  body: any;
  /** The reply that answered it (undefined for a 4xx from validation or an empty queue). */
  reply: FakeReply | undefined;
  /** True once the client closed the connection before the response was complete. */
  aborted: boolean;
  /** Settles when the exchange is over: completed, cut by the fake, or aborted by the client. */
  closed: Promise<void>;
}

export interface FakeOpenAIOptions {
  /** Answer for requests when the plan queue is empty (default: a 400 naming the problem). */
  defaultReply?: FakeReply;
  /** Reject requests the real API would reject (tool pairing, shapes); default true. */
  validate?: boolean;
}

export interface FakeOpenAI {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** `http://127.0.0.1:<port>/v1`, what the `openai` client takes as `baseURL`. */
  readonly baseURL: string;
  /** Every request received, in arrival order. */
  readonly requests: RecordedRequest[];
  /** Queues replies; each request takes the next one, whatever its endpoint. */
  plan(...replies: FakeReply[]): void;
  /** Replies still queued. */
  pending(): number;
  setDefaultReply(reply: FakeReply | undefined): void;
  /** Resolves with request `index` (0-based) once it has arrived. */
  waitForRequest(index: number, timeoutMs?: number): Promise<RecordedRequest>;
  /** Closes the server and every open connection. */
  close(): Promise<void>;
}

/** Starts a fake on an ephemeral port of 127.0.0.1. */
export async function startFakeOpenAI(options: FakeOpenAIOptions = {}): Promise<FakeOpenAI> {
  const queue: FakeReply[] = [];
  const requests: RecordedRequest[] = [];
  const arrivals: (() => void)[] = [];
  let defaultReply = options.defaultReply;
  let counter = 0;
  const validate = options.validate ?? true;

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      // A bug in the fake must fail the test loudly, not hang it.
      if (!res.headersSent) errorReply(res, 500, `fake-openai crashed: ${String(err)}`);
      else res.destroy(err as Error);
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    let body: any;
    try {
      body = raw === "" ? undefined : JSON.parse(raw);
    } catch {
      body = undefined;
    }
    const path = (req.url ?? "/").split("?")[0]!;
    let settle!: () => void;
    const record: RecordedRequest = {
      method: req.method ?? "GET",
      path,
      headers: req.headers,
      body,
      reply: undefined,
      aborted: false,
      closed: new Promise((resolve) => (settle = resolve)),
    };
    let cut = false;
    res.on("close", () => {
      if (!res.writableFinished && !cut) record.aborted = true;
      settle();
    });
    requests.push(record);
    for (const wake of arrivals.splice(0)) wake();

    const id = `fake${++counter}${Math.random().toString(36).slice(2, 8)}`;
    if (req.method === "GET" && path === "/v1/models") {
      return json(res, 200, { object: "list", data: [{ id: "fake-model", object: "model", created: 0, owned_by: "fake" }] });
    }
    const endpoint = endpoints[path];
    if (req.method !== "POST" || !endpoint) return errorReply(res, 404, `fake-openai: no route ${req.method} ${path}`, "not_found");
    const fail = (status: number, message: string, code?: string, headers?: Record<string, string>) =>
      endpoint.name === "messages" ? anthropicErrorReply(res, status, message, headers) : errorReply(res, status, message, code, headers);
    if (typeof body !== "object" || body === null) return fail(400, "fake-openai: the body must be a JSON object");
    if (validate) {
      const problem = endpoint.problem(body);
      if (problem) return fail(400, problem);
    }
    const reply = queue.shift() ?? defaultReply;
    if (!reply) return fail(400, `fake-openai: no reply planned for request #${requests.length}`);
    record.reply = reply;

    if (reply.headersDelayMs) await delay(reply.headersDelayMs);
    if (res.destroyed) return;
    if (reply.status !== undefined && reply.status !== 200) {
      const headers: Record<string, string> = reply.retryAfter !== undefined ? { "retry-after": String(reply.retryAfter) } : {};
      return fail(reply.status, reply.message ?? `fake-openai: planned status ${reply.status}`, reply.code, headers);
    }
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-request-id": id });
    res.flushHeaders();
    const payloads = reply.frames ?? endpoint.frames(reply, body, id);
    const sse = (payload: object) =>
      endpoint.name === "chat"
        ? `data: ${JSON.stringify(payload)}\n\n`
        : `event: ${(payload as { type?: string }).type ?? "message"}\ndata: ${JSON.stringify(payload)}\n\n`;
    const outcome = await writeFrames(res, payloads, sse, reply);
    if (outcome === "cut") {
      cut = true;
      res.socket?.destroy();
    } else if (outcome === "done") {
      res.end(endpoint.name === "chat" ? "data: [DONE]\n\n" : undefined);
    }
  }

  const sockets = new Set<Socket>();
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    baseURL: `${url}/v1`,
    requests,
    plan: (...replies) => void queue.push(...replies),
    pending: () => queue.length,
    setDefaultReply: (reply) => {
      defaultReply = reply;
    },
    async waitForRequest(index, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (requests.length <= index) {
        if (Date.now() > deadline) throw new Error(`fake-openai: request #${index} did not arrive within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          arrivals.push(resolve);
          setTimeout(resolve, 50);
        });
      }
      return requests[index]!;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * Writes the frames with backpressure. Returns "cut" when the socket must be destroyed
 * now, "stalled"/"gone" when nothing more may be written, "done" when all were written.
 */
async function writeFrames(
  res: ServerResponse,
  payloads: Iterable<object>,
  sse: (payload: object) => string,
  reply: FakeReply,
): Promise<"done" | "cut" | "stalled" | "gone"> {
  const stallAfter = reply.stall ? 0 : reply.stallAfter;
  const started = Date.now();
  let sent = 0;
  let batch = "";
  const flush = async () => {
    if (batch === "") return;
    const ok = res.write(batch);
    batch = "";
    if (!ok && !res.destroyed) {
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off("drain", done);
          res.off("close", done);
          resolve();
        };
        res.on("drain", done);
        res.on("close", done);
      });
    }
  };
  for (const payload of payloads) {
    if (res.destroyed) return "gone";
    if (reply.cutAfter !== undefined && sent >= reply.cutAfter) {
      await flush();
      await new Promise<void>((resolve) => res.write("", () => resolve()));
      return "cut";
    }
    if (stallAfter !== undefined && sent >= stallAfter) {
      await flush();
      return "stalled";
    }
    if (reply.rate !== undefined) {
      const due = started + (sent / reply.rate) * 1000;
      if (due > Date.now() + 2) {
        await flush();
        await delay(Math.max(0, due - Date.now()));
      }
    } else if (reply.frameDelayMs) {
      await flush();
      await delay(reply.frameDelayMs);
    }
    batch += sse(payload);
    sent++;
    // Small replies go out frame by frame (realistic chunking); floods are batched.
    if (reply.tokens === undefined || batch.length >= 16_384) await flush();
  }
  if (res.destroyed) return "gone";
  if (reply.cutAfter !== undefined && sent >= reply.cutAfter) {
    await flush();
    return "cut";
  }
  await flush();
  return "done";
}

/** The APIs the fake speaks, by path: how a reply is rendered and what the API rejects. */
const endpoints: Record<
  string,
  {
    name: "chat" | "responses" | "messages";
    frames: (reply: FakeReply, body: Record<string, unknown>, id: string) => Iterable<object>;
    problem: (body: Record<string, unknown>) => string | undefined;
  }
> = {
  "/v1/chat/completions": { name: "chat", frames: (r, b, id) => chatFrames(r, b, `chatcmpl-${id}`), problem: chatRequestProblem },
  "/v1/responses": { name: "responses", frames: (r, b, id) => responsesFrames(r, b, `resp_${id}`), problem: responsesRequestProblem },
  // Anthropic Messages (test/support/fake-anthropic): the SDK's base URL is the fake's `url`.
  "/v1/messages": { name: "messages", frames: messagesFrames, problem: messagesRequestProblem },
};

/** Anthropic's error body: `{type: "error", error: {type, message}}`; 529 is `overloaded_error`. */
function anthropicErrorReply(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  const types: Record<number, string> = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
  };
  json(res, status, { type: "error", error: { type: types[status] ?? "api_error", message } }, headers);
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

function errorReply(res: ServerResponse, status: number, message: string, code?: string, headers: Record<string, string> = {}): void {
  const type = status === 429 ? "rate_limit_error" : status >= 500 ? "server_error" : "invalid_request_error";
  json(res, status, { error: { message, type, param: null, code: code ?? (status === 429 ? "rate_limit_exceeded" : null) } }, headers);
}
