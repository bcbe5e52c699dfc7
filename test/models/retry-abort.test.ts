import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModelError, OpenAIChatModel, OpenAIResponsesModel, type ModelAdapter, type ModelEvent } from "../../src/models/index.ts";
import type { OpenAIModelOptions } from "../../src/models/index.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai/index.ts";
import { collect, collectUntilError, request, textOf } from "./helpers.ts";

let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(() => fake.close());

/** Fast backoff so only `retry-after` makes a test wait. */
const fastRetry = { retries: 3, baseDelayMs: 5, maxDelayMs: 20 };

const styles = [
  {
    api: "chat",
    make: (o: Partial<OpenAIModelOptions> = {}) =>
      new OpenAIChatModel({ provider: "fake", baseURL: fake.baseURL, supportsImages: false, retry: fastRetry, ...o }),
  },
  {
    api: "responses",
    make: (o: Partial<OpenAIModelOptions> = {}) =>
      new OpenAIResponsesModel({ provider: "fake", baseURL: fake.baseURL, supportsImages: false, retry: fastRetry, ...o }),
  },
] as const;

/** Reads events until `count` text deltas arrived, then returns the iterator (still open). */
async function readTextDeltas(adapter: ModelAdapter, signal: AbortSignal, count: number) {
  const iterator = adapter.stream(request({ signal }))[Symbol.asyncIterator]();
  const seen: ModelEvent[] = [];
  while (seen.filter((e) => e.type === "text_delta").length < count) {
    const next = await iterator.next();
    if (next.done) throw new Error("stream ended early");
    seen.push(next.value);
  }
  return { iterator, seen };
}

describe.each(styles)("$api retries and aborts", ({ make }) => {
  it("retries a 429 after the retry-after it was given, then succeeds", async () => {
    const before = fake.requests.length;
    fake.plan({ status: 429, retryAfter: 1 }, { text: "finally" });
    const started = performance.now();
    const events = await collect(make(), request());
    const elapsed = performance.now() - started;
    expect(textOf(events)).toBe("finally");
    expect(fake.requests.length - before).toBe(2);
    expect(elapsed).toBeGreaterThanOrEqual(900); // honoured, not the 5 ms backoff
    expect(elapsed).toBeLessThan(10_000);
  });

  it("retries a 500 and then succeeds", async () => {
    const before = fake.requests.length;
    fake.plan({ status: 500 }, { status: 503 }, { text: "up again" });
    expect(textOf(await collect(make(), request()))).toBe("up again");
    expect(fake.requests.length - before).toBe(3);
  });

  it("gives up after the configured retries with a retryable ModelError", async () => {
    const before = fake.requests.length;
    fake.plan({ status: 502 }, { status: 502 }, { status: 502 });
    const { error } = await collectUntilError(make({ retry: { ...fastRetry, retries: 2 } }), request());
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ retryable: true, status: 502, reason: "model_error" });
    expect(fake.requests.length - before).toBe(3);
  });

  it("does not retry a 400", async () => {
    const before = fake.requests.length;
    fake.plan({ status: 400, message: "Invalid 'messages'" }, { text: "never sent" });
    const { events, error } = await collectUntilError(make(), request());
    expect(events).toEqual([]);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ retryable: false, status: 400 });
    expect((error as Error).message).toContain("Invalid 'messages'");
    expect(fake.requests.length - before).toBe(1);
    fake.plan(); // drop the unused reply
    expect(textOf(await collect(make(), request()))).toBe("never sent");
  });

  it("does not retry a 429 for exhausted quota", async () => {
    const before = fake.requests.length;
    fake.plan({ status: 429, code: "insufficient_quota", message: "You exceeded your current quota" });
    const { error } = await collectUntilError(make(), request());
    expect(error).toMatchObject({ retryable: false, status: 429 });
    expect(fake.requests.length - before).toBe(1);
  });

  it("does not wait for a retry-after beyond the cap: fails at once, still retryable", async () => {
    const before = fake.requests.length;
    fake.plan({ status: 429, retryAfter: 3600 });
    const started = performance.now();
    const { error } = await collectUntilError(make(), request());
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(error).toMatchObject({ retryable: true, status: 429, retryAfterMs: 3_600_000 });
    expect(fake.requests.length - before).toBe(1);
  });

  it("retries a stream cut before any output", async () => {
    const before = fake.requests.length;
    fake.plan({ text: "lost", cutAfter: 1 }, { text: "second try" });
    expect(textOf(await collect(make(), request()))).toBe("second try");
    expect(fake.requests.length - before).toBe(2);
  });

  it("never retries once output has started: a cut stream throws a ModelError", async () => {
    const before = fake.requests.length;
    fake.plan({ text: "this answer gets cut off in the middle", chunkSize: 4, cutAfter: 6 }, { text: "must not be used" });
    const { events, error } = await collectUntilError(make(), request());
    expect(textOf(events).length).toBeGreaterThan(0);
    expect(error).toBeInstanceOf(ModelError);
    expect((error as ModelError).retryable).toBe(true);
    expect(fake.requests.length - before).toBe(1);
    fake.plan(); // keep the queue aligned for later tests
    await collect(make(), request()); // consumes "must not be used"
  });

  it("aborting mid-stream cancels the HTTP request and throws an AbortError", async () => {
    const before = fake.requests.length;
    fake.plan({ tokens: 1000, rate: 50 });
    const controller = new AbortController();
    const { iterator } = await readTextDeltas(make(), controller.signal, 2);
    controller.abort();
    const error = await iterator.next().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(DOMException);
    expect((error as DOMException).name).toBe("AbortError");
    const recorded = fake.requests[before]!;
    await recorded.closed;
    expect(recorded.aborted).toBe(true);
    expect(fake.requests.length - before).toBe(1);
  });

  it("throws the caller's abort reason when it gave one", async () => {
    fake.plan({ tokens: 1000, rate: 50 });
    const controller = new AbortController();
    const { iterator } = await readTextDeltas(make(), controller.signal, 1);
    const reason = new Error("turn cancelled");
    controller.abort(reason);
    await expect(iterator.next()).rejects.toBe(reason);
  });

  it("aborting a stalled stream (headers, then nothing) cancels it", async () => {
    const before = fake.requests.length;
    fake.plan({ stall: true });
    const controller = new AbortController();
    const pending = collectUntilError(make(), request({ signal: controller.signal }));
    const recorded = await fake.waitForRequest(before);
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort();
    const { events, error } = await pending;
    expect(events).toEqual([]);
    expect((error as Error).name).toBe("AbortError");
    await recorded.closed;
    expect(recorded.aborted).toBe(true);
  });

  it("aborting while waiting to retry stops at once without another request", async () => {
    const before = fake.requests.length;
    fake.plan({ status: 429, retryAfter: 20 });
    const controller = new AbortController();
    const pending = collectUntilError(make(), request({ signal: controller.signal }));
    await fake.waitForRequest(before);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = performance.now();
    controller.abort();
    const { error } = await pending;
    expect((error as Error).name).toBe("AbortError");
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(fake.requests.length - before).toBe(1);
  });

  it("fails a stream that goes silent with a retryable ModelError (idle timeout)", async () => {
    const before = fake.requests.length;
    fake.plan({ text: "some words then silence", stallAfter: 8 });
    const { events, error } = await collectUntilError(make({ idleTimeoutMs: 300 }), request());
    expect(events.length).toBeGreaterThan(0);
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ retryable: true });
    await fake.requests[before]!.closed;
    expect(fake.requests[before]!.aborted).toBe(true);
  });

  it("an already aborted signal sends nothing", async () => {
    const before = fake.requests.length;
    const controller = new AbortController();
    controller.abort();
    const { error } = await collectUntilError(make(), request({ signal: controller.signal }));
    expect((error as Error).name).toBe("AbortError");
    expect(fake.requests.length).toBe(before);
  });
});

describe("network failures", () => {
  it("retries when the provider cannot be reached, then reports a retryable ModelError", async () => {
    const gone = await startFakeOpenAI();
    const baseURL = gone.baseURL;
    await gone.close();
    const model = new OpenAIChatModel({ provider: "down", baseURL, supportsImages: false, retry: { retries: 1, baseDelayMs: 5, maxDelayMs: 10 } });
    const { error } = await collectUntilError(model, request());
    expect(error).toBeInstanceOf(ModelError);
    expect(error).toMatchObject({ retryable: true, status: undefined });
    expect((error as Error).message).toContain("could not reach");
  });
});
