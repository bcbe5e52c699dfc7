/**
 * Client tool names as providers take them. Clients may name tools anything
 * (`github.create_issue`, 80 characters, spaces); OpenAI and Anthropic refuse names outside
 * `^[a-zA-Z0-9_-]{1,64}$`. Each request is sent with provider-safe names and the tool calls
 * that come back are renamed to the client's names, so that nothing above `src/models` ever
 * sees a mapped name: the model sees safe names, the client and the transcript their own.
 */
import { createHash } from "node:crypto";
import { foldByFirstItem } from "../domain/index.ts";
import { pushEvents, streamOf } from "./push.ts";
import type { ModelAdapter, ModelEventSink, ModelMessage, ModelRequest } from "./types.ts";

/** The names OpenAI (Chat Completions and Responses) and Anthropic accept. */
export const PROVIDER_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

const MAX_LENGTH = 64;
const HASH_LENGTH = 8;

/** Both directions of one request's renaming. */
export interface ToolNameMap {
  /** True when every name is already safe: the request goes out as it is. */
  readonly identity: boolean;
  toProvider(name: string): string;
  /** The client's name of a safe name; a name the map does not know is returned as it is. */
  fromProvider(name: string): string;
}

/**
 * A collision-free renaming of `names` into `pattern`. Safe names keep themselves; every other
 * name becomes its characters outside `[a-zA-Z0-9_-]` replaced by `_`, cut so that `_` and an
 * 8-hex-digit SHA-256 of the original fit in 64 characters (`github_create_issue_5f0c…`). The
 * result depends only on the set of names, not their order; a clash (with a safe name or
 * another mapped one) takes the hash of the name with a counter instead.
 */
export function providerToolNames(names: Iterable<string>, pattern: RegExp = PROVIDER_TOOL_NAME): ToolNameMap {
  const unique = [...new Set(names)];
  const toSafe = new Map<string, string>();
  const taken = new Set<string>();
  for (const name of unique) {
    if (pattern.test(name)) {
      toSafe.set(name, name);
      taken.add(name);
    }
  }
  const unsafe = unique.filter((n) => !toSafe.has(n)).sort();
  for (const name of unsafe) {
    let candidate = safeName(name, 0);
    for (let attempt = 1; taken.has(candidate); attempt++) candidate = safeName(name, attempt);
    toSafe.set(name, candidate);
    taken.add(candidate);
  }
  const fromSafe = new Map([...toSafe].map(([client, safe]) => [safe, client]));
  return {
    identity: unsafe.length === 0,
    toProvider: (name) => toSafe.get(name) ?? name,
    fromProvider: (name) => fromSafe.get(name) ?? name,
  };
}

function safeName(name: string, attempt: number): string {
  const hash = createHash("sha256")
    .update(attempt === 0 ? name : `${name}\u0000${attempt}`)
    .digest("hex")
    .slice(0, HASH_LENGTH);
  const stem = name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, MAX_LENGTH - HASH_LENGTH - 1);
  return stem === "" ? `tool_${hash}` : `${stem}_${hash}`;
}

/** The tool names a conversation's calls and results mention, kept up as it grows. */
const namesInHistory = foldByFirstItem<ModelMessage, Set<string>>(
  () => new Set(),
  (names, message) => {
    for (const part of message.parts) if (part.type === "tool_use" || part.type === "tool_result") names.add(part.name);
    return names;
  },
);

/** Every tool name a request mentions: offered tools, and the calls and results of its history. */
function namesOf(request: ModelRequest): string[] {
  return [...request.tools.map((t) => t.name), ...namesInHistory(request.messages)];
}

function renameMessages(messages: readonly ModelMessage[], map: ToolNameMap): ModelMessage[] {
  return messages.map((message) => ({
    ...message,
    parts: message.parts.map((part) => (part.type === "tool_use" || part.type === "tool_result" ? { ...part, name: map.toProvider(part.name) } : part)),
  }));
}

/**
 * `adapter` behind the renaming above (names outside `pattern` mapped per request, tool calls
 * renamed back). A request whose names are all safe is passed through untouched.
 */
export function withProviderToolNames(adapter: ModelAdapter, pattern: RegExp = PROVIDER_TOOL_NAME): ModelAdapter {
  const renamed = (request: ModelRequest): { request: ModelRequest; map?: ToolNameMap } => {
    const map = providerToolNames(namesOf(request), pattern);
    if (map.identity) return { request };
    return {
      map,
      request: {
        ...request,
        tools: request.tools.map((t) => ({ ...t, name: map.toProvider(t.name) })),
        messages: renameMessages(request.messages, map),
      },
    };
  };
  const renameCalls = (sink: ModelEventSink, map: ToolNameMap | undefined): ModelEventSink =>
    map === undefined ? sink : (event) => sink(event.type === "tool_call" ? { ...event, name: map.fromProvider(event.name) } : event);
  return {
    provider: adapter.provider,
    stream(request) {
      const r = renamed(request);
      if (r.map === undefined) return adapter.stream(request);
      return streamOf((req, sink) => pushEvents(adapter, req, renameCalls(sink, r.map)), r.request);
    },
    streamTo(request, sink) {
      const r = renamed(request);
      return pushEvents(adapter, r.request, renameCalls(sink, r.map));
    },
  };
}
