import { AnthropicModel, anthropicDefaultModel, type AnthropicModelOptions } from "./anthropic/model.ts";
import { isOpenAIEndpoint } from "./content.ts";
import { httpFetch } from "./http-fetch.ts";
import { OpenAIChatModel } from "./openai-chat/model.ts";
import type { OpenAIModelOptions } from "./openai-client.ts";
import { OpenAIResponsesModel } from "./openai-responses/model.ts";
import { ScriptedModel } from "./scripted/model.ts";
import type { Script } from "./scripted/script.ts";
import type { RetryOptions } from "./retry.ts";
import type { ModelAdapter, ModelPrice } from "./types.ts";

export type ProviderApi = "chat" | "responses" | "anthropic" | "scripted";

/** One configured provider, validated and normalised (from the environment or the providers file). */
export interface ProviderConfig {
  name: string;
  api: ProviderApi;
  /** Undefined: the API's own endpoint (OpenAI's for `chat`/`responses`, Anthropic's for `anthropic`). */
  baseURL?: string;
  /** The API key itself, already read from `api_key_env`. */
  apiKey?: string;
  /** Accepted model ids; empty accepts any id the endpoint serves. */
  models: string[];
  /** Model id used when this provider is the default and a session names no model. */
  defaultModel?: string;
  /** Alias → model id of this provider (e.g. `fast` → `gpt-4.1-mini`). */
  aliases: Record<string, string>;
  contextWindow?: number;
  supportsImages: boolean;
  headers?: Record<string, string>;
  /** Extended thinking budget in tokens (api `anthropic` only); undefined: thinking off. */
  thinkingBudget?: number;
  /** Named scripts (api `scripted` only), played by model `<provider>/<name>`. */
  scripts?: Record<string, Script>;
  /** Prices by model id, `*` for every other model of the provider. */
  prices?: Record<string, ModelPrice>;
}

/** OpenAI's model used when provider `openai` is OpenAI itself and nothing else was chosen. */
export const openaiDefaultModel = "gpt-4.1-mini";

/** The API a provider speaks unless configured: Responses on OpenAI's endpoint, Chat Completions elsewhere. */
export function defaultApi(baseURL: string | undefined): "chat" | "responses" {
  return isOpenAIEndpoint(baseURL) ? "responses" : "chat";
}

/** Images are sent as images by default only to OpenAI itself; other servers opt in. */
export function defaultSupportsImages(baseURL: string | undefined): boolean {
  return isOpenAIEndpoint(baseURL);
}

/**
 * Provider `openai` from `OPENAI_API_KEY` / `OPENAI_BASE_URL` / `ROZ_OPENAI_API`, or
 * undefined when neither a key nor a non-OpenAI base URL is set (a local server such as
 * Ollama needs no key). It accepts any model id its endpoint serves.
 */
export function openaiFromSettings(settings: { openaiApiKey?: string; openaiBaseURL?: string; openaiApi?: "chat" | "responses" }): ProviderConfig | undefined {
  const { openaiApiKey: apiKey, openaiBaseURL: baseURL } = settings;
  if (!apiKey && (!baseURL || isOpenAIEndpoint(baseURL))) return undefined;
  const own = isOpenAIEndpoint(baseURL);
  return {
    name: "openai",
    api: settings.openaiApi ?? defaultApi(baseURL),
    ...(baseURL ? { baseURL } : {}),
    ...(apiKey ? { apiKey } : {}),
    models: [],
    ...(own ? { defaultModel: openaiDefaultModel } : {}),
    aliases: {},
    supportsImages: defaultSupportsImages(baseURL),
  };
}

/**
 * Provider `anthropic` from `ANTHROPIC_API_KEY` / `ANTHROPIC_BASE_URL` /
 * `ROZ_ANTHROPIC_THINKING_BUDGET`, or undefined when no key is set (a base URL alone, e.g.
 * a gateway that needs no key, also configures it). It accepts any model id.
 */
export function anthropicFromSettings(settings: {
  anthropicApiKey?: string;
  anthropicBaseURL?: string;
  anthropicThinkingBudget?: number;
}): ProviderConfig | undefined {
  const { anthropicApiKey: apiKey, anthropicBaseURL: baseURL, anthropicThinkingBudget: thinkingBudget } = settings;
  if (!apiKey && !baseURL) return undefined;
  return {
    name: "anthropic",
    api: "anthropic",
    ...(baseURL ? { baseURL } : {}),
    ...(apiKey ? { apiKey } : {}),
    models: [],
    defaultModel: anthropicDefaultModel,
    aliases: {},
    supportsImages: true,
    ...(thinkingBudget ? { thinkingBudget } : {}),
  };
}

/** Transport settings shared by every HTTP provider of a catalog. */
export interface AdapterSettings {
  retry?: RetryOptions;
  idleTimeoutMs?: number;
  fetch?: typeof fetch;
}

/** The adapter serving `config` (one per provider: it owns the connection pool). */
export function createAdapter(config: ProviderConfig, settings: AdapterSettings): ModelAdapter {
  if (config.api === "scripted") return new ScriptedModel({ provider: config.name, scripts: config.scripts ?? {} });
  const options: OpenAIModelOptions & AnthropicModelOptions = {
    provider: config.name,
    supportsImages: config.supportsImages,
    ...(config.apiKey ? { apiKey: config.apiKey } : {}),
    ...(config.baseURL ? { baseURL: config.baseURL } : {}),
    ...(config.headers ? { headers: config.headers } : {}),
    ...(settings.retry ? { retry: settings.retry } : {}),
    ...(settings.idleTimeoutMs !== undefined ? { idleTimeoutMs: settings.idleTimeoutMs } : {}),
    fetch: settings.fetch ?? httpFetch,
  };
  if (config.api === "anthropic") {
    return new AnthropicModel({ ...options, ...(config.thinkingBudget ? { thinkingBudget: config.thinkingBudget } : {}) });
  }
  return config.api === "chat" ? new OpenAIChatModel(options) : new OpenAIResponsesModel(options);
}
