// The scripted provider's step player: one implementation plays both the provider's
// scripts and the agent tests' model double (test/agent/support/test-model.ts).
import { describe, expect, it } from "vitest";
import { ModelError, type ModelEvent, playSteps, type PlayerStep } from "../../src/models/index.ts";

async function collect(steps: PlayerStep[], signal = new AbortController().signal, complete?: { inputTokens: number }): Promise<ModelEvent[]> {
  const events: ModelEvent[] = [];
  for await (const event of playSteps(steps, signal, complete)) events.push(event);
  return events;
}

describe("playSteps", () => {
  it("plays program steps exactly as given, with nothing added", async () => {
    const seen: string[] = [];
    const events = await collect([
      { event: { type: "text_delta", text: "all of it" } },
      { reached: () => seen.push("reached") },
      { wait: Promise.resolve() },
      { event: { type: "finish", reason: "end_turn" } },
    ]);
    expect(events).toEqual([
      { type: "text_delta", text: "all of it" },
      { type: "finish", reason: "end_turn" },
    ]);
    expect(seen).toEqual(["reached"]);
  });

  it("completes script steps like a provider: deltas, estimated usage, a finish", async () => {
    const events = await collect([{ text: "two words" }, { tool_call: { id: "c1", name: "ls", arguments: {} } }], undefined, { inputTokens: 7 });
    expect(events).toEqual([
      { type: "text_delta", text: "two " },
      { type: "text_delta", text: "words" },
      { type: "tool_call", id: "c1", name: "ls", arguments: {} },
      { type: "usage", usage: { inputTokens: 7, outputTokens: 4, cacheReadTokens: 0, cacheCreationTokens: 0 } },
      { type: "finish", reason: "tool_use" },
    ]);
  });

  it("ends a hang with the abort error when the signal aborts, and throws fail and error steps", async () => {
    const controller = new AbortController();
    const reached = Promise.withResolvers<void>();
    const playing = collect([{ reached: reached.resolve }, { hang: true }], controller.signal);
    await reached.promise;
    controller.abort();
    await expect(playing).rejects.toMatchObject({ name: "AbortError" });

    const failure = new Error("connection reset");
    await expect(collect([{ fail: failure }])).rejects.toBe(failure);
    await expect(collect([{ error: { message: "overloaded", retryable: true, status: 529 } }])).rejects.toBeInstanceOf(ModelError);
  });
});
