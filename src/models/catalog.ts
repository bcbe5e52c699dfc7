import { RozError } from "../errors/index.ts";
import { anthropicFromSettings, createAdapter, openaiFromSettings, type AdapterSettings, type ProviderConfig } from "./provider-config.ts";
import { loadProvidersFile, type InheritedProviders } from "./providers-file.ts";
import type { RetryOptions } from "./retry.ts";
import { defaultScriptedModel, scriptedModelIds } from "./scripted/model.ts";
import type { ModelAdapter, ModelCatalog, ResolvedModel } from "./types.ts";

/** What the catalog is built from; the app maps environment variables onto it. */
export interface ModelCatalogSettings {
  /** `OPENAI_API_KEY`: configures provider `openai`. */
  openaiApiKey?: string;
  /** `OPENAI_BASE_URL`: any OpenAI-compatible endpoint (a non-OpenAI URL alone also configures `openai`). */
  openaiBaseURL?: string;
  /** `ROZ_OPENAI_API`: default Responses on api.openai.com, else Chat Completions. */
  openaiApi?: "chat" | "responses";
  /** `ANTHROPIC_API_KEY`: configures provider `anthropic`. */
  anthropicApiKey?: string;
  /** `ANTHROPIC_BASE_URL`: another Messages endpoint (a gateway or proxy); alone it also configures `anthropic`. */
  anthropicBaseURL?: string;
  /** `ROZ_ANTHROPIC_THINKING_BUDGET`: extended thinking budget of provider `anthropic` (0: off). */
  anthropicThinkingBudget?: number;
  /** `ROZ_PROVIDERS_FILE`: JSON/YAML providers (see providers-file.ts). */
  providersFile?: string;
  /** `ROZ_DEFAULT_MODEL`: `provider/model` or an alias; must resolve, or the catalog is not built. */
  defaultModel?: string;
  /** Where `api_key_env` variables are read; default `process.env`. */
  env?: Record<string, string | undefined>;
  retry?: RetryOptions;
  /** Longest silence from a provider before a call fails (default 5 min). */
  idleTimeoutMs?: number;
  fetch?: typeof fetch;
}

const scriptedProvider: ProviderConfig = {
  name: "scripted",
  api: "scripted",
  models: scriptedModelIds([]),
  defaultModel: defaultScriptedModel,
  aliases: {},
  supportsImages: true,
};

/**
 * Builds the configured providers: `openai` and `anthropic` from the settings, then the
 * providers file in its order (a file entry of the same name replaces one from the settings, inheriting
 * its key, base URL, API and default model where it sets none), and always
 * `scripted` (the file may extend it with scripts). Validates everything at once and
 * throws RozError `config_invalid` on a bad file or a `defaultModel` that does not resolve.
 *
 * The default model is `defaultModel`, else the first provider's (in that order) default
 * model, else `scripted/default`. Resolution never calls a provider.
 */
export function createModelCatalog(settings: ModelCatalogSettings = {}): ModelCatalog {
  const fromSettings = [openaiFromSettings(settings), anthropicFromSettings(settings)].filter((p) => p !== undefined);
  const inherited = Object.fromEntries(fromSettings.map((p) => [p.name, pick(p)]));
  const env = settings.env ?? process.env;
  const fromFile = settings.providersFile ? loadProvidersFile(settings.providersFile, env, inherited) : [];
  const configs: ProviderConfig[] = [];
  for (const provider of fromSettings) if (!fromFile.some((p) => p.name === provider.name)) configs.push(provider);
  configs.push(...fromFile);
  if (!configs.some((p) => p.name === scriptedProvider.name)) configs.push(scriptedProvider);

  const adapterSettings: AdapterSettings = {
    ...(settings.retry ? { retry: settings.retry } : {}),
    ...(settings.idleTimeoutMs !== undefined ? { idleTimeoutMs: settings.idleTimeoutMs } : {}),
    ...(settings.fetch ? { fetch: settings.fetch } : {}),
  };
  const providers = configs.map((config) => ({ config, adapter: createAdapter(config, adapterSettings) }));

  const first = configs.find((p) => p.defaultModel !== undefined);
  const fallback = first ? `${first.name}/${first.defaultModel}` : `${scriptedProvider.name}/${defaultScriptedModel}`;
  const catalog = new Catalog(providers, fallback);
  if (settings.defaultModel === undefined) return catalog;
  // Canonical name (`provider/model`) even when the setting is an alias, for logs and SessionStarted.
  const chosen = catalog.resolve(settings.defaultModel);
  if (!chosen) {
    const known = catalog
      .providers()
      .map((p) => p.name)
      .join(", ");
    throw new RozError(
      "config_invalid",
      `ROZ_DEFAULT_MODEL "${settings.defaultModel}" does not name a configured model (use provider/model or an alias; providers: ${known})`,
    );
  }
  return new Catalog(providers, chosen.name);
}

function pick({ apiKey, baseURL, api, defaultModel, thinkingBudget }: ProviderConfig): InheritedProviders[string] {
  return {
    ...(thinkingBudget ? { thinkingBudget } : {}),
    ...(apiKey ? { apiKey } : {}),
    ...(baseURL ? { baseURL } : {}),
    ...(api !== "scripted" ? { api } : {}),
    ...(defaultModel ? { defaultModel } : {}),
  };
}

class Catalog implements ModelCatalog {
  readonly defaultModel: string;
  readonly offline: boolean;
  readonly #providers: { config: ProviderConfig; adapter: ModelAdapter }[];

  constructor(providers: { config: ProviderConfig; adapter: ModelAdapter }[], defaultModel: string) {
    this.#providers = providers;
    this.defaultModel = defaultModel;
    this.offline = providers.every((p) => p.config.api === "scripted");
  }

  resolve(name: string | undefined): ResolvedModel | undefined {
    const wanted = name?.trim() || this.defaultModel;
    const slash = wanted.indexOf("/");
    if (slash >= 0) {
      // Split at the first slash only: OpenRouter ids such as `anthropic/claude-sonnet-4` keep theirs.
      const provider = this.#providers.find((p) => p.config.name === wanted.slice(0, slash));
      return provider && this.#model(provider, wanted.slice(slash + 1));
    }
    // A bare name is an alias: the default model's provider first, then the others in order.
    const home = this.defaultModel.slice(0, this.defaultModel.indexOf("/"));
    const ordered = [...this.#providers].sort((a, b) => Number(b.config.name === home) - Number(a.config.name === home));
    const owner = ordered.find((p) => Object.hasOwn(p.config.aliases, wanted));
    return owner && this.#model(owner, wanted);
  }

  providers(): ReturnType<ModelCatalog["providers"]> {
    return this.#providers.map(({ config }) => ({
      name: config.name,
      api: config.api,
      ...(config.baseURL ? { baseURL: config.baseURL } : {}),
      models: [...config.models],
      aliases: { ...config.aliases },
    }));
  }

  #model(provider: { config: ProviderConfig; adapter: ModelAdapter }, model: string): ResolvedModel | undefined {
    const { config, adapter } = provider;
    const modelId = Object.hasOwn(config.aliases, model) ? config.aliases[model]! : model;
    if (modelId === "" || (config.models.length > 0 && !config.models.includes(modelId))) return undefined;
    const price = config.prices && (Object.hasOwn(config.prices, modelId) ? config.prices[modelId] : config.prices["*"]);
    return {
      name: `${config.name}/${modelId}`,
      modelId,
      adapter,
      supportsImages: config.supportsImages,
      ...(config.contextWindow !== undefined ? { contextWindow: config.contextWindow } : {}),
      ...(price ? { price } : {}),
    };
  }
}
