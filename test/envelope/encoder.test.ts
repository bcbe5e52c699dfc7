// The per-stream encoder (src/rpc/responses.ts) on its own: what each format makes of
// numbered session events, including those no e2e path reaches easily (OODA).
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createResponseEncoder, type EventFormat } from "../../src/rpc/index.ts";
import type { SequencedEvent, SessionEvent } from "../../src/session/index.ts";
import type { SessionEventEnvelope, SessionResponse } from "../../src/gen/roz/v1/agent_pb.js";

const sessionId = randomUUID();
const at = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
const item = (seq: number, event: SessionEvent, turnIndex?: number): SequencedEvent => ({
  seq,
  event,
  sessionId,
  at,
  ...(turnIndex !== undefined ? { turnIndex } : {}),
});
const usage = { inputTokens: 10, outputTokens: 5, cacheReadTokens: 3, cacheCreationTokens: 1 };
const modelCall: SessionEvent = {
  type: "model_call_completed",
  model: "openai/gpt-x",
  modelId: "gpt-x",
  provider: "openai",
  usage,
  latencyMs: 42,
  stopReason: "end_turn",
};
const thinking: SessionEvent = { type: "activity", state: "thinking", detail: "" };

const envelopeOf = (r: SessionResponse): SessionEventEnvelope => {
  if (r.response.case !== "sessionEvent") throw new Error(`not an envelope: ${r.response.case}`);
  return r.response.value;
};
const encode = (format: EventFormat, ...items: SequencedEvent[]): SessionResponse[] => {
  const encoder = createResponseEncoder(format);
  return items.flatMap((i) => encoder(i));
};

describe("flat", () => {
  it("one v0.2 response per event; nothing for envelope-only events and session_completed (no message without a variant)", () => {
    const out = encode(
      "flat",
      item(1, thinking, 1),
      item(2, modelCall, 1),
      item(3, { type: "session_completed", status: "completed", reason: "bye", usage, turns: 1 }),
    );
    expect(out.map((r) => [Number(r.seq), r.response.case])).toEqual([[1, "activityUpdate"]]);
  });
});

describe("envelope", () => {
  it("opens each turn with turn_started once, shares the turn's correlation, numbers every envelope with its event's seq", () => {
    const out = encode("envelope", item(5, thinking, 2), item(6, { type: "text_delta", messageId: "m", text: "hi" }, 2), item(7, { type: "pong" }, 2));
    expect(out.map((r) => [Number(r.seq), r.response.case === "sessionEvent" ? envelopeOf(r).eventType : r.response.case])).toEqual([
      [5, "turn_started"],
      [5, "activity_changed"],
      [6, "text_delta"],
      [7, "pong"],
    ]);
    const envelopes = out.slice(0, 3).map(envelopeOf);
    expect(envelopes[0]!.typedEvent).toMatchObject({ case: "turnStarted", value: { turnIndex: 2 } });
    expect(new Set(envelopes.map((e) => e.correlationId)).size).toBe(1);
    expect(new Set(envelopes.map((e) => e.eventId)).size).toBe(3);
    expect(envelopes.every((e) => Number(e.timestamp!.seconds) * 1000 + e.timestamp!.nanos / 1e6 === at)).toBe(true);
  });

  it("gives an event the same ids on every stream; outside a turn an event is its own correlation", () => {
    const event = item(9, { type: "session_error", code: "already_started", message: "x", retryable: false });
    const [a] = encode("envelope", event).map(envelopeOf);
    const [b] = encode("envelope", event).map(envelopeOf);
    expect(a!.eventId).toBe(b!.eventId);
    expect(a!.correlationId).toBe(a!.eventId);
    expect(a).toMatchObject({ eventType: "session_rejected", typedEvent: { case: "sessionRejected", value: { code: "already_started" } } });
  });

  it("names model_call_completed model_call", () => {
    const out = encode("envelope", item(1, modelCall)).map(envelopeOf);
    expect(out.map((e) => e.eventType)).toEqual(["model_call"]);
    expect(out[0]!.typedEvent).toMatchObject({
      case: "modelCallCompleted",
      value: { modelId: "gpt-x", provider: "openai", inputTokens: 10, outputTokens: 5, latencyMs: 42n, cacheHitTokens: 3, stopReason: "end_turn" },
    });
  });

  it("maps activity states to upstream's, OODA observation to observing, and follows a question with approval_requested", () => {
    const approval = { toolCallId: "c1", toolName: "move", parameters: {}, reason: "moves", timeoutMs: 1500 };
    const states: [SessionEvent, string][] = [
      [thinking, "planning"],
      [{ type: "activity", state: "calling_tool", detail: "observe_scene", observing: true }, "observing"],
      [{ type: "activity", state: "calling_tool", detail: "move" }, "calling_tool"],
      [{ type: "activity", state: "idle", detail: "" }, "idle"],
    ];
    for (const [event, state] of states) expect(encode("envelope", item(1, event)).map(envelopeOf)[0]!.typedEvent.value).toMatchObject({ state });
    const asked = encode("envelope", item(3, { type: "activity", state: "waiting_approval", detail: "c1", approval })).map(envelopeOf);
    expect(asked.map((e) => e.typedEvent.case)).toEqual(["activityChanged", "approvalRequested"]);
    expect(asked[1]!.typedEvent.value).toMatchObject({ approvalId: "c1", action: "move", reason: "moves", timeoutSecs: 2n });
  });
});

describe("both", () => {
  it("sends the flat response first, then the envelopes, with one seq; envelope-only events only as envelopes", () => {
    const out = encode("both", item(1, thinking, 1), item(2, modelCall, 1), item(3, { type: "keepalive", tokensUsed: 1, tokensMax: 2 }));
    expect(out.map((r) => [Number(r.seq), r.response.case === "sessionEvent" ? envelopeOf(r).eventType : r.response.case])).toEqual([
      [1, "activityUpdate"],
      [1, "turn_started"],
      [1, "activity_changed"],
      [2, "model_call"],
      [3, "keepalive"],
    ]);
  });
});
