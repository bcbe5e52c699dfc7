// session-behaviour.md §9: a newer upstream client, built from upstream's proto (only the
// envelope, keepalive and pong on SessionResponse), drives the same e2e behaviours as the
// v0.2 client through `roz-event-format: envelope`: tool round trip, approval by
// approval_id (with a modifier, accepted and refused), cancel, errors, compaction.
import * as grpc from "@grpc/grpc-js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createGrpcJsClient, req, type RozGrpcJsClient, type SessionCall, type WireResponse } from "../support/grpc-js-client.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { createUpstreamClient, fromStruct, up, type UpstreamCall, type UpstreamClient, type UpstreamEnvelope } from "../support/upstream-client.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const script = (responses: unknown[][]): string => `script: ${JSON.stringify({ responses })}`;
const readFile = { tool_call: { name: "read_file", arguments: { path: "a.txt" }, id: "c1" } };
const move = { tool_call: { name: "move", arguments: { x: 1, speed: "fast" }, id: "m1" } };
const tools = [
  { name: "read_file", description: "reads a file" },
  { name: "move", description: "moves the arm" },
];

let server: TestServer;
let upstream: UpstreamClient;
let flat: RozGrpcJsClient;
const calls: { cancel(): void }[] = [];

beforeAll(async () => {
  server = await startServer({
    ROZ_KEEPALIVE_INTERVAL_MS: "3600000",
    ROZ_APPROVAL_TIMEOUT_MS: "60000",
    ROZ_PERMISSION_RULES: JSON.stringify([{ tool_pattern: "move", policy: "require_confirmation", reason: "moves the arm" }]),
  });
  upstream = createUpstreamClient(server.url);
  flat = createGrpcJsClient(server.url);
});
afterEach(() => {
  for (const call of calls.splice(0)) call.cancel();
});
afterAll(async () => {
  upstream?.close();
  flat?.close();
  await server?.close();
});

const openUpstream = (format?: string): UpstreamCall => {
  const call = upstream.openSession(format);
  calls.push(call);
  return call;
};

/** The payload of an envelope (the member its `typed_event` names). */
const payload = <T = Record<string, unknown>>(e: UpstreamEnvelope): T => e[e.typed_event] as T;

/** The next envelope (keepalives and pongs passed over), optionally of one event_type. */
async function nextEvent(call: UpstreamCall, type?: string): Promise<UpstreamEnvelope> {
  const r = await call.responses.nextMatching((r) => r.response === "session_event" && (type === undefined || r.session_event!.event_type === type), 10_000);
  return r.session_event!;
}

/** Envelopes up to and including the next turn_finished. */
async function readTurn(call: UpstreamCall): Promise<UpstreamEnvelope[]> {
  const out: UpstreamEnvelope[] = [];
  for (;;) {
    const e = await nextEvent(call);
    out.push(e);
    if (e.event_type === "turn_finished") return out;
  }
}

const types = (events: UpstreamEnvelope[]): string[] => events.map((e) => e.event_type);
const ofType = (events: UpstreamEnvelope[], type: string): UpstreamEnvelope[] => events.filter((e) => e.event_type === type);

async function startUpstream(start: Record<string, unknown> = {}): Promise<{ call: UpstreamCall; started: UpstreamEnvelope }> {
  const call = openUpstream();
  call.send(up.start({ tools, ...start }));
  return { call, started: await nextEvent(call) };
}

describe("envelope format, upstream client", () => {
  it("session_started{session_id, mode:server, model_name, permissions}; each envelope has a UUID event_id, a timestamp and the payload's name", async () => {
    const before = Date.now();
    const { started } = await startUpstream();
    expect(started).toMatchObject({ event_type: "session_started", typed_event: "session_started" });
    expect(started.event_id).toMatch(UUID);
    expect(started.correlation_id).toMatch(UUID);
    const seconds = Number(started.timestamp!.seconds);
    expect(seconds).toBeGreaterThanOrEqual(Math.floor(before / 1000));
    expect(seconds).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    const body = payload<{ session_id: string; mode: string; model_name: string; permissions: { tool_pattern: string; policy: string }[] }>(started);
    expect(body.session_id).toMatch(UUID);
    expect(body).toMatchObject({ mode: "server", model_name: "scripted/default" });
    expect(body.permissions[0]).toMatchObject({ tool_pattern: "move", policy: "require_confirmation", reason: "moves the arm" });
  });

  it("tool round trip: turn_started opens the turn, one correlation_id for all of it, tool_call_requested with the call's id, model_call per model call", async () => {
    const { call } = await startUpstream();
    call.send(up.user(script([[{ text: "Let me look." }, readFile], [{ text: "It says hi." }]]), { message_id: "m-1" }));
    const first = await readUntil(call, "tool_call_requested");
    const requested = payload<{ call_id: string; tool_name: string; parameters: unknown; timeout_ms: number }>(first.at(-1)!);
    expect(requested).toMatchObject({ call_id: "c1", tool_name: "read_file", timeout_ms: 120_000 });
    expect(fromStruct(requested.parameters)).toEqual({ path: "a.txt" });
    call.send(up.toolResult("c1", "hi"));
    const turn = [...first, ...(await readTurn(call))];

    expect(turn[0]).toMatchObject({ event_type: "turn_started", turn_started: { turn_index: 1 } });
    expect(new Set(turn.map((e) => e.correlation_id)).size).toBe(1);
    expect(new Set(turn.map((e) => e.event_id)).size).toBe(turn.length);
    expect(types(turn)).toEqual(expect.arrayContaining(["activity_changed", "text_delta", "model_call", "tool_call_requested", "turn_finished"]));
    expect(ofType(turn, "activity_changed").map((e) => payload<{ state: string }>(e).state)).toEqual(["planning", "calling_tool", "planning", "idle"]);
    expect(ofType(turn, "text_delta").every((e) => payload<{ message_id: string }>(e).message_id === "m-1")).toBe(true);
    const calls = ofType(turn, "model_call").map((e) => payload<Record<string, unknown>>(e));
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatchObject({ model_id: "default", provider: "scripted", stop_reason: "tool_use" });
    expect(calls[1]).toMatchObject({ stop_reason: "end_turn" });
    expect(turn.at(-1)).toMatchObject({
      event_type: "turn_finished",
      turn_finished: { stop_reason: "end_turn", message_id: "m-1" },
    });
    const finished = payload<{ input_tokens: number; output_tokens: number }>(turn.at(-1)!);
    // turn_finished counts what every model call of the turn reported.
    const sum = (k: "input_tokens" | "output_tokens") => calls.reduce((n, c) => n + (c[k] as number), 0);
    expect(finished.input_tokens).toBe(sum("input_tokens"));
    expect(finished.output_tokens).toBe(sum("output_tokens"));

    call.send(up.user("again"));
    const second = await readTurn(call);
    expect(second[0]).toMatchObject({ event_type: "turn_started", turn_started: { turn_index: 2 } });
    expect(second[0]!.correlation_id).not.toBe(turn[0]!.correlation_id);
  });

  it("approval by approval_id: approval_requested{action, reason, timeout_secs}; a modifier with the same keys and types changes the call's arguments", async () => {
    const { call } = await startUpstream();
    call.send(up.user(script([[move], [{ text: "moved" }]])));
    const asked = await readUntil(call, "approval_requested");
    expect(ofType(asked, "activity_changed").at(-1)).toMatchObject({ activity_changed: { state: "awaiting_approval", reason: "m1" } });
    const question = asked.at(-1)!;
    expect(payload(question)).toMatchObject({ approval_id: "m1", action: "move", reason: "moves the arm", timeout_secs: "60" });
    call.send(up.decision("m1", true, { x: 5 }));
    const resolved = await nextEvent(call, "approval_resolved");
    expect(payload<{ approval_id: string }>(resolved).approval_id).toBe("m1");
    expect(fromStruct(payload<{ outcome: unknown }>(resolved).outcome)).toEqual({ type: "approved" });
    const requested = await nextEvent(call, "tool_call_requested");
    expect(fromStruct(payload<{ parameters: unknown }>(requested).parameters)).toEqual({ x: 5, speed: "fast" });
    // The question, its answer and the request belong to the turn.
    expect(new Set([question, resolved, requested].map((e) => e.correlation_id)).size).toBe(1);
    call.send(up.toolResult("m1", "done"));
    expect((await readTurn(call)).at(-1)).toMatchObject({ turn_finished: { stop_reason: "end_turn" } });
  });

  it.each([
    ["a modifier that adds a key", true, { y: 2 }, "invalid_arguments"],
    ["a modifier that changes a type", true, { x: "far" }, "invalid_arguments"],
    ["a denial", false, undefined, "approval_denied"],
  ])("%s: approval_resolved{denied, reason}, tool_unavailable, no request", async (_name, approved, modifier, reason) => {
    const { call } = await startUpstream();
    call.send(up.user(script([[move], [{ text: "ok, not moving" }]])));
    await nextEvent(call, "approval_requested");
    call.send(up.decision("m1", approved, modifier));
    const rest = await readTurn(call);
    expect(fromStruct(payload<{ outcome: unknown }>(ofType(rest, "approval_resolved")[0]!).outcome)).toEqual({ type: "denied", reason });
    expect(ofType(rest, "tool_unavailable").map((e) => payload(e))).toEqual([{ tool_name: "move", reason }]);
    expect(ofType(rest, "tool_call_requested")).toEqual([]);
    expect(payload(rest.at(-1)!)).toMatchObject({ stop_reason: "end_turn" });
  });

  it("cancel: cancel_turn ends the turn with turn_finished{cancelled}; the cut model call is reported as cancelled", async () => {
    const { call } = await startUpstream();
    call.send(up.user(script([[{ text: "Starting" }, { delay_ms: 30_000 }, { text: "never" }]])));
    await nextEvent(call, "text_delta");
    call.send(up.cancelTurn());
    const rest = await readTurn(call);
    expect(payload(rest.at(-1)!)).toMatchObject({ stop_reason: "cancelled" });
    expect(ofType(rest, "model_call").map((e) => payload(e))).toEqual([expect.objectContaining({ stop_reason: "cancelled" })]);
  });

  it("errors are session_rejected{code, message, retryable}: in a turn with its correlation, outside with their own; pong is the flat pong", async () => {
    const { call } = await startUpstream();
    call.send(up.start());
    const again = await nextEvent(call, "session_rejected");
    expect(payload(again)).toMatchObject({ code: "already_started", retryable: false });
    expect(again.correlation_id).toBe(again.event_id);
    call.send(up.toolResult("nope", "late"));
    expect(payload(await nextEvent(call, "session_rejected"))).toMatchObject({ code: "no_active_turn" });

    call.send(up.user(script([[{ error: { message: "provider down", retryable: true, status: 503 } }]])));
    const turn = await readTurn(call);
    const failed = ofType(turn, "session_rejected")[0]!;
    expect(payload(failed)).toMatchObject({ code: "model_error", retryable: true });
    expect(failed.correlation_id).toBe(turn[0]!.correlation_id);
    expect(payload(turn.at(-1)!)).toMatchObject({ stop_reason: "error" });
    expect(ofType(turn, "model_call").map((e) => payload(e))).toEqual([expect.objectContaining({ stop_reason: "error" })]);

    call.send(up.ping());
    expect((await call.responses.nextMatching((r) => r.response !== "keepalive", 5_000)).response).toBe("pong");
  });

  it("compaction: context_compacted{level tool_clear|thinking_strip|llm_summary, messages_affected, tokens_before > tokens_after}", async () => {
    const { call } = await startUpstream({ max_context_tokens: 2000 });
    const seen: UpstreamEnvelope[] = [];
    for (let turn = 0; turn < 8; turn++) {
      call.send(up.user(Array.from({ length: 120 }, (_, i) => `t${turn}w${i}`).join(" ")));
      seen.push(...(await readTurn(call)));
    }
    call.send(up.ping());
    for (;;) {
      const r = await call.next(10_000);
      if (r.response === "pong") break;
      if (r.response === "session_event") seen.push(r.session_event!);
    }
    const compactions = ofType(seen, "context_compacted").map((e) =>
      payload<{ level: string; messages_affected: number; tokens_before: number; tokens_after: number }>(e),
    );
    expect(compactions.length).toBeGreaterThan(0);
    for (const c of compactions) {
      expect(["tool_clear", "thinking_strip", "llm_summary"]).toContain(c.level);
      expect(c.messages_affected).toBeGreaterThan(0);
      expect(c.tokens_after).toBeLessThan(c.tokens_before);
    }
    expect(compactions.map((c) => c.level)).toContain("llm_summary");
  }, 30_000);

  it("the session's end: session_completed{summary, input_tokens, output_tokens} is the last event", async () => {
    const { call } = await startUpstream();
    call.send(up.user("hello"));
    const turn = await readTurn(call);
    call.end();
    const rest = (await call.responses.rest(10_000)).filter((r) => r.response === "session_event").map((r) => r.session_event!);
    expect(types(rest)).toEqual(["session_completed"]);
    const done = payload<{ summary: string; input_tokens: string; output_tokens: string }>(rest[0]!);
    const finished = payload<{ input_tokens: number; output_tokens: number }>(turn.at(-1)!);
    expect(done.summary).toContain("completed after 1 turn");
    expect(Number(done.input_tokens)).toBe(finished.input_tokens);
    expect(Number(done.output_tokens)).toBe(finished.output_tokens);
    expect((await call.status).code).toBe(0);
  });

  it("an unknown roz-event-format is refused with INVALID_ARGUMENT naming the header (in-band error in the server's default format)", async () => {
    const call = openUpstream("xml");
    call.send(up.start());
    const status = await call.status;
    expect(status.code).toBe(3);
    // (grpc-js leaves the commas of the message percent-encoded.)
    expect(status.details).toMatch(/^roz-event-format must be one of flat.+envelope.+both.+got "xml"$/);

    const v02 = flat.openSession(metadataOf("xml"));
    calls.push(v02);
    const [error] = await v02.responses.rest(10_000);
    expect(error).toMatchObject({ response: "error", seq: "0", error: { code: "invalid_argument" } });
  });
});

/** Envelopes up to and including the next one of `type`. */
async function readUntil(call: UpstreamCall, type: string): Promise<UpstreamEnvelope[]> {
  const out: UpstreamEnvelope[] = [];
  for (;;) {
    const e = await nextEvent(call);
    out.push(e);
    if (e.event_type === type) return out;
  }
}

describe("formats side by side", () => {
  /** A v0.2 client's tool round trip (default format: flat); returns everything it received. */
  async function flatRoundTrip(): Promise<WireResponse[]> {
    const call: SessionCall = flat.openSession();
    calls.push(call);
    call.send(req.start({ tools: [{ name: "read_file", description: "reads" }] }));
    call.send(req.userMessage(script([[{ text: "Looking." }, readFile], [{ text: "Done." }]])));
    await call.responses.nextMatching((r) => r.response === "tool_request", 10_000);
    call.send(req.toolResult("c1", "hi"));
    await call.responses.nextMatching((r) => r.response === "turn_complete", 10_000);
    call.end();
    await call.responses.rest(10_000);
    return call.responses.seen;
  }

  async function upstreamRoundTrip(): Promise<UpstreamEnvelope[]> {
    const { call, started } = await startUpstream();
    call.send(up.user(script([[{ text: "Looking." }, readFile], [{ text: "Done." }]])));
    await nextEvent(call, "tool_call_requested");
    call.send(up.toolResult("c1", "hi"));
    await nextEvent(call, "turn_finished");
    call.end();
    const rest = await call.responses.rest(10_000);
    return [started, ...rest.filter((r) => r.response === "session_event").map((r) => r.session_event!)];
  }

  it("a v0.2 client on the same server at the same time gets its flat events, numbered without gaps", async () => {
    const [flatSeen, upstreamSeen] = await Promise.all([flatRoundTrip(), upstreamRoundTrip()]);
    expect(types(upstreamSeen)).toContain("session_completed");
    // Nothing of the envelope reaches the flat stream, and every message has its v0.2 variant.
    expect(flatSeen.filter((r) => r.response === "session_event")).toEqual([]);
    expect(flatSeen.filter((r) => r.response === undefined)).toEqual([]);
    expect(flatSeen.map((r) => Number(r.seq))).toEqual(flatSeen.map((_, i) => i + 1));
    const kinds = flatSeen.map((r) => r.response);
    expect(kinds[0]).toBe("session_started");
    expect(new Set(kinds)).toEqual(
      new Set(["session_started", "input_update", "activity_update", "text_delta", "tool_request", "tool_finished", "turn_complete"]),
    );
  });

  it("both: every event's flat response, then its envelopes, all with the event's seq", async () => {
    const call = flat.openSession(metadataOf("both"));
    calls.push(call);
    call.send(req.start());
    call.send(req.userMessage("hello"));
    await call.responses.nextMatching((r) => r.response === "turn_complete", 10_000);
    await call.responses.nextMatching((r) => r.response === "session_event" && (r["session_event"] as UpstreamEnvelope).event_type === "turn_finished", 10_000);
    const seen = call.responses.seen;
    const bySeq = new Map<string, string[]>();
    for (const r of seen) {
      const envelope = r["session_event"] as UpstreamEnvelope | undefined;
      bySeq.set(r.seq, [...(bySeq.get(r.seq) ?? []), r.response === "session_event" ? envelope!.event_type : r.response]);
    }
    expect([...bySeq.keys()].map(Number)).toEqual([...bySeq.keys()].map((_, i) => i + 1));
    expect(bySeq.get("1")).toEqual(["session_started", "session_started"]);
    // The message that opens the turn is told flat only (upstream has no input events).
    expect(bySeq.get("2")).toEqual(["input_update"]);
    // The turn's first event also opens it in the envelope.
    expect(bySeq.get("3")).toEqual(["activity_update", "turn_started", "activity_changed"]);
    const values = [...bySeq.values()];
    // A model call's figures take no seq of their own: they follow the event before them.
    expect(values.some((v) => v.includes("model_call") && v[0] !== "model_call")).toBe(true);
    expect(values.at(-1)).toEqual(["turn_complete", "turn_finished"]);
  });
});

function metadataOf(format: string): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set("roz-event-format", format);
  return metadata;
}
