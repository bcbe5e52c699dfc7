import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RozError } from "../../src/errors/index.ts";
import { costOf, createModelCatalog, OpenAIChatModel, OpenAIResponsesModel, ScriptedModel } from "../../src/models/index.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai/index.ts";
import { collect, request, textOf } from "./helpers.ts";

let dir: string;
let fake: FakeOpenAI;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "roz-catalog-"));
  fake = await startFakeOpenAI();
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await fake.close();
});

let fileCount = 0;
function file(name: string, content: string): string {
  const path = join(dir, `${fileCount++}-${name}`);
  writeFileSync(path, content);
  return path;
}

function configError(fn: () => unknown): RozError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(RozError);
    expect((err as RozError).reason).toBe("config_invalid");
    return err as RozError;
  }
  throw new Error("expected a config_invalid error");
}

const yamlProviders = `
providers:
  - name: ollama
    base_url: ${"http://127.0.0.1:11434/v1"}
    models: [qwen3:4b, llama3.2]
    default_model: qwen3:4b
    aliases: { fast: llama3.2, standard: qwen3:4b }
    context_window: 32768
  - name: router
    base_url: https://openrouter.ai/api/v1
    api: responses
    api_key_env: ROUTER_KEY
    supports_images: true
    aliases: { max: anthropic/claude-opus-4 }
  - name: scripted
    scripts:
      demo:
        responses:
          - - text: "scripted demo"
`;

describe("with no provider configured", () => {
  const catalog = createModelCatalog({});

  it("is offline and defaults to scripted/default", () => {
    expect(catalog.offline).toBe(true);
    expect(catalog.defaultModel).toBe("scripted/default");
    expect(catalog.providers()).toEqual([{ name: "scripted", api: "scripted", models: ["default"], aliases: {} }]);
  });

  it("resolves the default for an empty name, and nothing else unknown", () => {
    const resolved = catalog.resolve(undefined);
    expect(resolved).toMatchObject({ name: "scripted/default", modelId: "default", supportsImages: true });
    expect(resolved!.adapter).toBeInstanceOf(ScriptedModel);
    expect(catalog.resolve("")?.name).toBe("scripted/default");
    expect(catalog.resolve("scripted/other")).toBeUndefined();
    expect(catalog.resolve("openai/gpt-4.1")).toBeUndefined();
    expect(catalog.resolve("fast")).toBeUndefined();
  });
});

describe("provider openai from the settings", () => {
  it("uses Responses and gpt-4.1-mini on OpenAI's endpoint and accepts any model", () => {
    const catalog = createModelCatalog({ openaiApiKey: "sk-x" });
    expect(catalog.offline).toBe(false);
    expect(catalog.defaultModel).toBe("openai/gpt-4.1-mini");
    const resolved = catalog.resolve("openai/o4-mini");
    expect(resolved).toMatchObject({ name: "openai/o4-mini", modelId: "o4-mini", supportsImages: true });
    expect(resolved!.adapter).toBeInstanceOf(OpenAIResponsesModel);
    expect(catalog.providers()[0]).toMatchObject({ name: "openai", api: "responses" });
  });

  it("uses Chat Completions on any other base URL (no key needed), switchable", () => {
    const local = createModelCatalog({ openaiBaseURL: "http://127.0.0.1:11434/v1" });
    expect(local.resolve("openai/qwen3:4b")!.adapter).toBeInstanceOf(OpenAIChatModel);
    expect(local.resolve("openai/qwen3:4b")!.supportsImages).toBe(false);
    expect(local.defaultModel).toBe("scripted/default"); // nothing says which model the server has
    const switched = createModelCatalog({ openaiApiKey: "k", openaiBaseURL: "http://127.0.0.1:8000/v1", openaiApi: "responses" });
    expect(switched.resolve("openai/m")!.adapter).toBeInstanceOf(OpenAIResponsesModel);
    const ownChat = createModelCatalog({ openaiApiKey: "k", openaiApi: "chat" });
    expect(ownChat.resolve("openai/gpt-4.1")!.adapter).toBeInstanceOf(OpenAIChatModel);
  });

  it("splits only at the first slash (OpenRouter-style ids)", () => {
    const catalog = createModelCatalog({ openaiApiKey: "k", openaiBaseURL: "https://openrouter.ai/api/v1" });
    expect(catalog.resolve("openai/anthropic/claude-sonnet-4")).toMatchObject({ modelId: "anthropic/claude-sonnet-4" });
  });

  it("streams through the resolved adapter with the configured key", async () => {
    const catalog = createModelCatalog({ openaiApiKey: "sk-live", openaiBaseURL: fake.baseURL, defaultModel: "openai/served-model" });
    const resolved = catalog.resolve(undefined)!;
    fake.plan({ text: "from the fake" });
    const events = await collect(resolved.adapter, request({ model: resolved.modelId }));
    expect(textOf(events)).toBe("from the fake");
    const recorded = fake.requests.at(-1)!;
    expect(recorded.path).toBe("/v1/chat/completions");
    expect(recorded.body.model).toBe("served-model");
    expect(recorded.headers.authorization).toBe("Bearer sk-live");
  });
});

describe("providers file", () => {
  const env = { ROUTER_KEY: "rk-123" };

  it("loads YAML: models lists, aliases, defaults, API choice and limits", () => {
    const catalog = createModelCatalog({ providersFile: file("providers.yaml", yamlProviders), env });
    expect(catalog.defaultModel).toBe("ollama/qwen3:4b");
    expect(catalog.offline).toBe(false);
    expect(catalog.resolve("ollama/llama3.2")).toMatchObject({ name: "ollama/llama3.2", contextWindow: 32768, supportsImages: false });
    expect(catalog.resolve("ollama/mistral")).toBeUndefined(); // not in its models list
    expect(catalog.resolve("ollama/fast")).toMatchObject({ name: "ollama/llama3.2" });
    expect(catalog.resolve("fast")).toMatchObject({ name: "ollama/llama3.2" });
    expect(catalog.resolve("max")).toMatchObject({ name: "router/anthropic/claude-opus-4", supportsImages: true });
    expect(catalog.resolve("router/any/model")!.adapter).toBeInstanceOf(OpenAIResponsesModel);
    expect(catalog.resolve("ollama/qwen3:4b")!.adapter).toBeInstanceOf(OpenAIChatModel);
    expect(catalog.resolve("scripted/demo")).toMatchObject({ name: "scripted/demo" });
    expect(catalog.resolve("scripted/default")).toBeDefined();
    expect(catalog.resolve("nobody/x")).toBeUndefined();
    expect(catalog.providers().map((p) => [p.name, p.api])).toEqual([
      ["ollama", "chat"],
      ["router", "responses"],
      ["scripted", "scripted"],
    ]);
  });

  it("searches bare aliases in the default model's provider first", () => {
    const json = JSON.stringify({
      providers: [
        { name: "a", base_url: "http://127.0.0.1:1/v1", models: ["a1", "a2"], aliases: { fast: "a1" } },
        { name: "b", base_url: "http://127.0.0.1:2/v1", models: ["b1"], aliases: { fast: "b1" } },
      ],
    });
    const path = file("p.json", json);
    expect(createModelCatalog({ providersFile: path }).resolve("fast")!.name).toBe("a/a1");
    expect(createModelCatalog({ providersFile: path, defaultModel: "b/b1" }).resolve("fast")!.name).toBe("b/b1");
    expect(createModelCatalog({ providersFile: path, defaultModel: "fast" }).defaultModel).toBe("a/a1");
    expect(createModelCatalog({ providersFile: path }).defaultModel).toBe("a/a1"); // first of models
  });

  it("accepts providers as a map by name; a file entry openai replaces the settings one, inheriting its connection", async () => {
    const path = file("map.yaml", "providers:\n  openai:\n    models: [served, other]\n    aliases: { standard: served }\n");
    const catalog = createModelCatalog({ providersFile: path, openaiApiKey: "sk-inherited", openaiBaseURL: fake.baseURL });
    expect(catalog.providers().filter((p) => p.name === "openai")).toEqual([
      { name: "openai", api: "chat", baseURL: fake.baseURL, models: ["served", "other"], aliases: { standard: "served" } },
    ]);
    expect(catalog.defaultModel).toBe("openai/served");
    expect(catalog.resolve("openai/unlisted")).toBeUndefined();
    const resolved = catalog.resolve("standard")!;
    expect(resolved.name).toBe("openai/served");
    fake.plan({ text: "inherited" });
    expect(textOf(await collect(resolved.adapter, request({ model: resolved.modelId })))).toBe("inherited");
    expect(fake.requests.at(-1)!.headers.authorization).toBe("Bearer sk-inherited");
  });

  it("plays named scripts from the file through the scripted provider", async () => {
    const catalog = createModelCatalog({ providersFile: file("s.yaml", yamlProviders), env, defaultModel: "scripted/demo" });
    const resolved = catalog.resolve(undefined)!;
    expect(textOf(await collect(resolved.adapter, request({ model: resolved.modelId })))).toBe("scripted demo");
  });

  it.each([
    ["missing.yaml", null, /providers file .*missing\.yaml: cannot be read/],
    ["bad.json", "{ nope", /bad\.json: is not valid JSON/],
    ["bad.yaml", "providers: [\n  - name: a\n   bad", /bad\.yaml: is not valid YAML/],
    ["top.yaml", "models: []", /top\.yaml: models: unknown field/],
    ["list.yaml", "providers: 3", /providers: must be a list/],
    ["name.yaml", "providers: [{ name: 'a/b' }]", /providers\[0\]\.name: must be a name/],
    ["url.yaml", "providers: [{ name: x, base_url: 'ftp://h' }]", /providers\[0\] \(x\)\.base_url: must be an http\(s\) URL/],
    ["api.yaml", "providers: [{ name: x, api: soap }]", /\(x\)\.api: must be "chat", "responses", "anthropic" or "scripted"/],
    ["camel.yaml", "providers: [{ name: x, baseUrl: 'http://h' }]", /\(x\)\.baseUrl: unknown field \(did you mean "base_url"\?\)/],
    ["key.yaml", "providers: [{ name: x, api_key_env: NOT_SET_ANYWHERE }]", /\(x\)\.api_key_env: environment variable NOT_SET_ANYWHERE is not set/],
    ["alias.yaml", "providers: [{ name: x, base_url: 'http://h', models: [a], aliases: { fast: b } }]", /\(x\)\.aliases\.fast: "b" is not in models/],
    ["default.yaml", "providers: [{ name: x, base_url: 'http://h', models: [a], default_model: c }]", /\(x\)\.default_model: "c" is not in models/],
    ["window.yaml", "providers: [{ name: x, base_url: 'http://h', context_window: -5 }]", /\(x\)\.context_window: must be a positive integer/],
    ["nokey.yaml", "providers: [{ name: x, models: [gpt-4.1] }]", /\(x\)\.api_key_env: is required for OpenAI's endpoint/],
    ["dup.yaml", "providers: [{ name: x, base_url: 'http://h' }, { name: x, base_url: 'http://h' }]", /providers\[1\]\.name: provider "x" is defined twice/],
    [
      "script.yaml",
      "providers: [{ name: scripted, scripts: { s: { responses: [[{ finish: nope }]] } } }]",
      /\(scripted\)\.scripts\.s\.responses\[0\]\[0\]\.finish: must be one of/,
    ],
    ["scripted-url.yaml", "providers: [{ name: scripted, base_url: 'http://h' }]", /\(scripted\)\.base_url: does not apply to a scripted provider/],
    ["prices.yaml", "providers: [{ name: x, base_url: 'http://h', prices: [1] }]", /\(x\)\.prices: must be a map from model id/],
    [
      "price-model.yaml",
      "providers: [{ name: x, base_url: 'http://h', models: [a], prices: { b: { input: 1, output: 1 } } }]",
      /\(x\)\.prices\.b: "b" is not in models/,
    ],
    [
      "price-neg.yaml",
      "providers: [{ name: x, base_url: 'http://h', prices: { a: { input: -1, output: 1 } } }]",
      /\(x\)\.prices\.a\.input: must be a number of USD per million tokens, 0 or more/,
    ],
    ["price-missing.yaml", "providers: [{ name: x, base_url: 'http://h', prices: { a: { input: 1 } } }]", /\(x\)\.prices\.a\.output: must be a number/],
    [
      "price-text.yaml",
      "providers: [{ name: x, base_url: 'http://h', prices: { a: { input: 1, output: '2' } } }]",
      /\(x\)\.prices\.a\.output: must be a number/,
    ],
    [
      "price-field.yaml",
      "providers: [{ name: x, base_url: 'http://h', prices: { a: { input: 1, output: 1, cached: 1 } } }]",
      /\(x\)\.prices\.a\.cached: unknown field/,
    ],
  ])("rejects %s with an error naming the file and field", (name, content, pattern) => {
    const path = content === null ? join(dir, name) : file(name, content);
    const error = configError(() => createModelCatalog({ providersFile: path, env: {} }));
    expect(error.message).toMatch(pattern);
    expect(error.message).toContain(path);
  });
});

describe("prices", () => {
  it("a model's price is its own entry, else the provider's \"*\"; an alias prices its model; cache prices default to input", () => {
    const path = file(
      "prices.yaml",
      `providers:
  - name: p
    base_url: 'http://127.0.0.1:1/v1'
    aliases: { fast: small }
    prices:
      fast: { input: 0.4, output: 1.6, cache_read: 0.1, cache_write: 0.5 }
      "*": { input: 2, output: 8 }
  - { name: free, base_url: 'http://127.0.0.1:2/v1' }
  - { name: scripted, prices: { default: { input: 1, output: 2 } } }
`,
    );
    const catalog = createModelCatalog({ providersFile: path });
    expect(catalog.resolve("p/small")!.price).toEqual({ input: 0.4, output: 1.6, cacheRead: 0.1, cacheWrite: 0.5 });
    expect(catalog.resolve("p/fast")!.price).toEqual({ input: 0.4, output: 1.6, cacheRead: 0.1, cacheWrite: 0.5 });
    expect(catalog.resolve("p/big")!.price).toEqual({ input: 2, output: 8, cacheRead: 2, cacheWrite: 2 });
    expect(catalog.resolve("free/any")!.price).toBeUndefined();
    expect(catalog.resolve("scripted/default")!.price).toEqual({ input: 1, output: 2, cacheRead: 1, cacheWrite: 1 });
  });

  it("costs uncached input, cache reads, cache writes and output each at their price; no price costs 0", () => {
    const price = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
    const usage = { inputTokens: 10_000, outputTokens: 2_000, cacheReadTokens: 6_000, cacheCreationTokens: 1_000 };
    // 3000 uncached × 3 + 6000 × 0.3 + 1000 × 3.75 + 2000 × 15, per million.
    expect(costOf(usage, price)).toBeCloseTo((9_000 + 1_800 + 3_750 + 30_000) / 1e6, 12);
    expect(costOf(usage, undefined)).toBe(0);
  });
});

describe("default model", () => {
  it("rejects a ROZ_DEFAULT_MODEL that does not resolve", () => {
    expect(configError(() => createModelCatalog({ defaultModel: "openai/gpt-4.1" })).message).toMatch(/ROZ_DEFAULT_MODEL "openai\/gpt-4\.1"/);
    expect(() => createModelCatalog({ defaultModel: "scripted/default" })).not.toThrow();
  });

  it("takes the first configured provider's default, else scripted/default", () => {
    const path = file(
      "order.yaml",
      "providers:\n  - { name: nodefault, base_url: 'http://127.0.0.1:1/v1' }\n  - { name: second, base_url: 'http://127.0.0.1:2/v1', default_model: m2 }\n",
    );
    expect(createModelCatalog({ providersFile: path }).defaultModel).toBe("second/m2");
    expect(createModelCatalog({ providersFile: path, openaiApiKey: "k" }).defaultModel).toBe("openai/gpt-4.1-mini");
  });
});
