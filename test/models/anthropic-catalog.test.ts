// Provider `anthropic` in the catalog: from ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL, as the
// default model, and as `api: anthropic` in the providers file (thinking_budget validated).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { RozError } from "../../src/errors/index.ts";
import { AnthropicModel, createModelCatalog } from "../../src/models/index.ts";
import { startFakeAnthropic, type FakeAnthropic } from "../support/fake-anthropic/index.ts";
import { collect, request, textOf } from "./helpers.ts";

let dir: string;
let fake: FakeAnthropic;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "roz-anthropic-catalog-"));
  fake = await startFakeAnthropic();
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await fake.close();
});

const file = (name: string, content: string): string => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};

it("ANTHROPIC_API_KEY configures provider anthropic, whose default model is claude-sonnet-4-5; any id resolves", () => {
  const catalog = createModelCatalog({ anthropicApiKey: "sk-ant" });
  expect(catalog.defaultModel).toBe("anthropic/claude-sonnet-4-5");
  const resolved = catalog.resolve("anthropic/claude-opus-4-1")!;
  expect(resolved).toMatchObject({ name: "anthropic/claude-opus-4-1", modelId: "claude-opus-4-1", supportsImages: true });
  expect(resolved.adapter).toBeInstanceOf(AnthropicModel);
  expect(catalog.providers().find((p) => p.name === "anthropic")).toMatchObject({ api: "anthropic" });
});

it("ROZ_DEFAULT_MODEL can name it next to openai; ANTHROPIC_BASE_URL is where the calls go", async () => {
  const catalog = createModelCatalog({
    openaiApiKey: "sk-openai",
    anthropicApiKey: "sk-ant",
    anthropicBaseURL: fake.url,
    defaultModel: "anthropic/fake-model",
  });
  const model = catalog.resolve(undefined)!;
  expect(model.name).toBe("anthropic/fake-model");
  fake.plan({ text: "from the fake" });
  expect(textOf(await collect(model.adapter, request({ model: model.modelId })))).toBe("from the fake");
  expect(fake.requests.at(-1)!.path).toBe("/v1/messages");
});

it("without a key or base URL there is no provider anthropic", () => {
  expect(createModelCatalog({}).resolve("anthropic/claude-sonnet-4-5")).toBeUndefined();
});

it("the providers file takes api: anthropic with thinking_budget, and sends the budget", async () => {
  const path = file(
    "p.yaml",
    `providers:\n  - name: claude\n    api: anthropic\n    base_url: ${fake.url}\n    thinking_budget: 2048\n    aliases: { smart: fake-model }\n`,
  );
  const catalog = createModelCatalog({ providersFile: path });
  const model = catalog.resolve("claude/smart")!;
  fake.plan({ reasoning: "hmm", text: "ok" });
  await collect(model.adapter, request({ model: model.modelId }));
  expect(fake.requests.at(-1)!.body.thinking).toEqual({ type: "enabled", budget_tokens: 2048 });
  expect(fake.requests.at(-1)!.body.max_tokens).toBeGreaterThan(2048);
});

it.each([
  ["providers: [{ name: c, api: anthropic }]", /\(c\)\.api_key_env: is required for Anthropic's endpoint/],
  [
    "providers: [{ name: c, api: anthropic, api_key_env: K, thinking_budget: 10 }]",
    /\(c\)\.thinking_budget: must be 0 \(off\) or a whole number of tokens, at least 1024/,
  ],
  ["providers: [{ name: c, api: chat, base_url: 'http://x', thinking_budget: 2048 }]", /\(c\)\.thinking_budget: only an anthropic provider/],
])("rejects %s", (content, message) => {
  const path = file(`bad-${Math.random().toString(36).slice(2)}.yaml`, content);
  let error: unknown;
  try {
    createModelCatalog({ providersFile: path, env: { K: "key" } });
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(RozError);
  expect((error as RozError).reason).toBe("config_invalid");
  expect((error as Error).message).toMatch(message);
});
