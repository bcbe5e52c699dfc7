import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ModelError, OpenAIChatModel, OpenAIResponsesModel } from "../../src/models/index.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai/index.ts";
import { collect, collectUntilError, request } from "./helpers.ts";

/** The load modes benchmarks rely on, and the fake's own contract. */
let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI();
});
afterAll(() => fake.close());

const styles = [
  { api: "chat", make: () => new OpenAIChatModel({ provider: "f", baseURL: fake.baseURL, supportsImages: false }) },
  { api: "responses", make: () => new OpenAIResponsesModel({ provider: "f", baseURL: fake.baseURL, supportsImages: false }) },
] as const;

describe.each(styles)("$api load modes", ({ make }) => {
  it("fast mode streams N tokens as separate deltas", async () => {
    fake.plan({ tokens: 20_000 });
    const events = await collect(make(), request());
    expect(events.filter((e) => e.type === "text_delta")).toHaveLength(20_000);
    expect(events.find((e) => e.type === "usage")).toMatchObject({ usage: { outputTokens: 20_000 } });
  });

  it("rate mode paces the tokens", async () => {
    fake.plan({ tokens: 30, rate: 100 });
    const started = performance.now();
    const events = await collect(make(), request());
    expect(events.filter((e) => e.type === "text_delta")).toHaveLength(30);
    expect(performance.now() - started).toBeGreaterThanOrEqual(250); // 30 tokens at 100/s ≈ 300 ms
  });
});

describe("fake server contract", () => {
  it("answers an empty queue with a non-retryable 400 that says so, or with the default reply", async () => {
    const model = new OpenAIChatModel({ provider: "f", baseURL: fake.baseURL, supportsImages: false });
    const { error } = await collectUntilError(model, request());
    expect(error).toBeInstanceOf(ModelError);
    expect((error as Error).message).toContain("no reply planned");
    fake.setDefaultReply({ text: "default" });
    try {
      expect((await collect(model, request())).some((e) => e.type === "text_delta")).toBe(true);
    } finally {
      fake.setDefaultReply(undefined);
    }
  });

  it("records bodies and headers and reports unknown routes as 404", async () => {
    const response = await fetch(`${fake.baseURL}/embeddings`, { method: "POST", headers: { "x-test": "1" }, body: "{}" });
    expect(response.status).toBe(404);
    const recorded = fake.requests.at(-1)!;
    expect(recorded).toMatchObject({ method: "POST", path: "/v1/embeddings", body: {}, aborted: false });
    expect(recorded.headers["x-test"]).toBe("1");
  });
});
