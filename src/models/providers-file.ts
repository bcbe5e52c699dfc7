/**
 * The providers file (`ROZ_PROVIDERS_FILE`, JSON or YAML): read and validated once at
 * startup. Every error is a RozError `config_invalid` whose message names the file and the
 * field, e.g. `providers file ./p.yaml: providers[1] (ollama).base_url: must be an http(s) URL`.
 *
 * ```yaml
 * providers:
 *   - name: ollama
 *     base_url: http://localhost:11434/v1
 *     api: chat                 # chat | responses | anthropic | scripted (default: responses on api.openai.com, else chat)
 *     api_key_env: OLLAMA_KEY   # optional: variable holding the key (must be set)
 *     models: [qwen3:4b]        # optional: empty/absent accepts any model id
 *     default_model: qwen3:4b   # optional: defaults to the first of `models`
 *     aliases: { fast: qwen3:4b }
 *     context_window: 32768
 *     supports_images: false    # default: true on api.openai.com only
 *     headers: { X-Title: roz }
 *   - name: claude
 *     api: anthropic            # Anthropic Messages; base_url defaults to https://api.anthropic.com
 *     api_key_env: ANTHROPIC_API_KEY
 *     thinking_budget: 4096     # optional, anthropic only: extended thinking budget (tokens, ≥ 1024)
 *     prices:                   # optional: USD per million tokens, by model id or "*" (see prices.ts)
 *       claude-sonnet-4-5: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 }
 *   - name: scripted
 *     scripts: { demo: { responses: [[{ text: "hi" }]] } }
 * ```
 * `providers` may also be a map from name to provider.
 */
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { RozError } from "../errors/index.ts";
import { anthropicDefaultModel } from "./anthropic/model.ts";
import { isOpenAIEndpoint } from "./content.ts";
import { isPlainObject } from "./plain-object.ts";
import { parsePrices } from "./prices.ts";
import { defaultApi, defaultSupportsImages, type ProviderApi, type ProviderConfig } from "./provider-config.ts";
import { scriptedModelIds } from "./scripted/model.ts";
import { parseScript, ScriptError, type Script } from "./scripted/script.ts";

type Env = Record<string, string | undefined>;

/**
 * Settings a file provider of the same name inherits where it sets none: lets
 * a file entry `openai` add aliases or models without repeating `OPENAI_API_KEY`/`_BASE_URL`.
 */
export type InheritedProviders = Record<
  string,
  { apiKey?: string; baseURL?: string; api?: Exclude<ProviderApi, "scripted">; defaultModel?: string; thinkingBudget?: number }
>;
type Fail = (field: string, message: string) => never;

const providerName = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const providerFields = [
  "name",
  "base_url",
  "api",
  "api_key_env",
  "models",
  "default_model",
  "aliases",
  "context_window",
  "supports_images",
  "headers",
  "scripts",
  "thinking_budget",
  "prices",
];
const scriptedFields = new Set(["name", "api", "default_model", "aliases", "context_window", "supports_images", "scripts", "prices"]);

/** Reads, parses (`.json` as JSON, anything else as YAML) and validates the providers file. */
export function loadProvidersFile(file: string, env: Env, inherited: InheritedProviders = {}): ProviderConfig[] {
  const fail = (message: string): never => {
    throw new RozError("config_invalid", `providers file ${file}: ${message}`);
  };
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    fail(`cannot be read (${(err as Error).message})`);
  }
  const json = /\.json$/i.test(file);
  let document: unknown;
  try {
    document = json ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    fail(`is not valid ${json ? "JSON" : "YAML"} (${(err as Error).message})`);
  }
  return parseProvidersDocument(document, file, env, inherited);
}

/** Validates a parsed providers document; `file` only names the source in errors. */
function parseProvidersDocument(document: unknown, file: string, env: Env, inherited: InheritedProviders = {}): ProviderConfig[] {
  const fail: Fail = (field, message) => {
    throw new RozError("config_invalid", `providers file ${file}: ${field}: ${message}`);
  };
  if (!isPlainObject(document)) fail("(top level)", 'must be an object with a "providers" list');
  const doc = document as Record<string, unknown>;
  for (const key of Object.keys(doc)) if (key !== "providers") fail(key, 'unknown field (expected "providers")');
  const raw = doc.providers;
  let entries: [string, unknown][];
  if (Array.isArray(raw)) entries = raw.map((p, i) => [`providers[${i}]`, p]);
  else if (isPlainObject(raw)) {
    entries = Object.entries(raw).map(([name, p]) => [`providers.${name}`, isPlainObject(p) ? { name, ...p } : p]);
  } else return fail("providers", "must be a list (or a map by name) of providers");

  const seen = new Set<string>();
  return entries.map(([path, value]) => {
    const config = parseProvider(value, path, env, inherited, fail);
    if (seen.has(config.name)) fail(`${path}.name`, `provider "${config.name}" is defined twice`);
    seen.add(config.name);
    return config;
  });
}

function parseProvider(value: unknown, path: string, env: Env, inherited: InheritedProviders, failAt: Fail): ProviderConfig {
  if (!isPlainObject(value)) failAt(path, "must be an object");
  const p = value as Record<string, unknown>;
  const name = p.name;
  if (typeof name !== "string" || !providerName.test(name)) {
    failAt(`${path}.name`, "must be a name of letters, digits, '.', '_' or '-' (no '/')");
  }
  const at = `${path} (${name as string})`;
  const fail = (field: string, message: string) => failAt(`${at}.${field}`, message);
  for (const key of Object.keys(p)) {
    if (!providerFields.includes(key)) {
      const snake = key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
      fail(key, providerFields.includes(snake) ? `unknown field (did you mean "${snake}"?)` : "unknown field");
    }
  }

  const inherit = Object.hasOwn(inherited, name as string) ? inherited[name as string] : undefined;
  const baseURL = optionalString(p.base_url, "base_url", fail) ?? inherit?.baseURL;
  if (baseURL !== undefined && !/^https?:$/.test(safeURL(baseURL)?.protocol ?? "")) fail("base_url", "must be an http(s) URL");
  const apiValue = p.api ?? inherit?.api ?? (name === "scripted" || p.scripts !== undefined ? "scripted" : defaultApi(baseURL));
  if (apiValue !== "chat" && apiValue !== "responses" && apiValue !== "anthropic" && apiValue !== "scripted") {
    fail("api", 'must be "chat", "responses", "anthropic" or "scripted"');
  }
  const api = apiValue as ProviderApi;
  if (api === "scripted") {
    for (const key of Object.keys(p)) if (!scriptedFields.has(key)) fail(key, "does not apply to a scripted provider");
  } else if (p.scripts !== undefined) fail("scripts", 'only a scripted provider (api: "scripted") has scripts');

  let apiKey = inherit?.apiKey;
  const apiKeyEnv = optionalString(p.api_key_env, "api_key_env", fail);
  if (apiKeyEnv !== undefined) {
    apiKey = env[apiKeyEnv];
    if (!apiKey) fail("api_key_env", `environment variable ${apiKeyEnv} is not set`);
  } else if (api === "anthropic" && !apiKey && baseURL === undefined) {
    fail("api_key_env", "is required for Anthropic's endpoint (set base_url for a gateway that needs none)");
  } else if (api !== "scripted" && api !== "anthropic" && !apiKey && isOpenAIEndpoint(baseURL)) {
    fail("api_key_env", "is required for OpenAI's endpoint (set base_url for a local server)");
  }
  const thinkingBudget = p.thinking_budget ?? (api === "anthropic" ? inherit?.thinkingBudget : undefined);
  if (thinkingBudget !== undefined) {
    if (api !== "anthropic") fail("thinking_budget", 'only an anthropic provider (api: "anthropic") has a thinking budget');
    if (!Number.isInteger(thinkingBudget) || ((thinkingBudget as number) !== 0 && (thinkingBudget as number) < 1024)) {
      fail("thinking_budget", "must be 0 (off) or a whole number of tokens, at least 1024");
    }
  }

  const scripts = api === "scripted" ? parseScripts(p.scripts, fail) : undefined;
  const models = api === "scripted" ? scriptedModelIds(Object.keys(scripts ?? {})) : stringList(p.models, "models", fail);
  const known = (model: string) => models.length === 0 || models.includes(model);

  const aliases: Record<string, string> = {};
  if (p.aliases !== undefined) {
    if (!isPlainObject(p.aliases)) fail("aliases", "must be a map from alias to model id");
    for (const [alias, target] of Object.entries(p.aliases as Record<string, unknown>)) {
      if (alias === "" || alias.includes("/")) fail(`aliases.${alias}`, "an alias may not be empty or contain '/'");
      if (typeof target !== "string" || target === "") fail(`aliases.${alias}`, "must be a model id");
      if (!known(target as string)) fail(`aliases.${alias}`, `"${target as string}" is not in models`);
      aliases[alias] = target as string;
    }
  }

  let defaultModel = optionalString(p.default_model, "default_model", fail);
  if (defaultModel !== undefined) {
    if (Object.hasOwn(aliases, defaultModel)) defaultModel = aliases[defaultModel]!;
    if (!known(defaultModel)) fail("default_model", `"${defaultModel}" is not in models`);
  } else if (api !== "scripted") {
    defaultModel = models[0] ?? inherit?.defaultModel ?? (api === "anthropic" ? anthropicDefaultModel : undefined);
  }

  const contextWindow = p.context_window;
  if (contextWindow !== undefined && (!Number.isInteger(contextWindow) || (contextWindow as number) <= 0)) {
    fail("context_window", "must be a positive integer (tokens)");
  }
  const supportsImages = p.supports_images ?? (api === "scripted" || api === "anthropic" ? true : defaultSupportsImages(baseURL));
  if (typeof supportsImages !== "boolean") fail("supports_images", "must be true or false");
  const headers = parseHeaders(p.headers, fail);
  const prices = parsePrices(p.prices, models, aliases, fail);

  return {
    name: name as string,
    api,
    models,
    aliases,
    supportsImages: supportsImages as boolean,
    ...(baseURL !== undefined ? { baseURL } : {}),
    ...(apiKey !== undefined ? { apiKey } : {}),
    ...(defaultModel !== undefined ? { defaultModel } : {}),
    ...(contextWindow !== undefined ? { contextWindow: contextWindow as number } : {}),
    ...(headers ? { headers } : {}),
    ...(thinkingBudget ? { thinkingBudget: thinkingBudget as number } : {}),
    ...(scripts ? { scripts } : {}),
    ...(prices ? { prices } : {}),
  };
}

function optionalString(value: unknown, field: string, fail: Fail): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || value.trim() === "") fail(field, "must be a non-empty string");
  return value as string;
}

function stringList(value: unknown, field: string, fail: Fail): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((m) => typeof m !== "string" || m === "")) fail(field, "must be a list of model ids");
  return [...new Set(value as string[])];
}

function parseHeaders(value: unknown, fail: Fail): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  if (!isPlainObject(value) || Object.values(value).some((v) => typeof v !== "string")) {
    fail("headers", "must be a map of header names to strings");
  }
  return value as Record<string, string>;
}

function parseScripts(value: unknown, fail: Fail): Record<string, Script> | undefined {
  if (value === undefined) return undefined;
  if (!isPlainObject(value)) fail("scripts", "must be a map from script name to script");
  const scripts: Record<string, Script> = {};
  for (const [name, script] of Object.entries(value as Record<string, unknown>)) {
    if (name === "" || name.includes("/")) fail(`scripts.${name}`, "a script name may not be empty or contain '/'");
    try {
      scripts[name] = parseScript(script, `scripts.${name}`);
    } catch (err) {
      if (err instanceof ScriptError) fail(err.path, err.detail);
      throw err;
    }
  }
  return scripts;
}

function safeURL(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}
