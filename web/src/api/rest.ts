import { authHeaders, signOut } from "./credentials.ts";

/** A REST error answer: `{"error":{"code","message","details":{"field"}}}`. */
export class RestError extends Error {
  readonly status: number;
  readonly code: string;
  /** The offending field, e.g. `body.permissions.0.tool_pattern`, when the server names one. */
  readonly field: string | undefined;
  constructor(status: number, code: string, message: string, field?: string) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

/**
 * Calls a REST route of this origin with the tab's key. A 401 signs the tab out (unless
 * `probe`, used to find out whether the server needs a key at all).
 */
export async function rest<T>(method: string, path: string, body?: unknown, opts: { probe?: boolean; key?: string } = {}): Promise<T> {
  const headers: Record<string, string> = opts.key !== undefined ? { authorization: `Bearer ${opts.key}` } : opts.probe ? {} : authHeaders();
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  if (res.status === 204) return undefined as T;
  const json = (await res.json().catch(() => ({}))) as { error?: { code?: string; message?: string; details?: { field?: string } } };
  if (!res.ok) {
    const e = json.error ?? {};
    const error = new RestError(res.status, e.code ?? "unknown", e.message ?? `HTTP ${res.status}`, e.details?.field);
    if (res.status === 401 && !opts.probe && opts.key === undefined) signOut(error.message);
    throw error;
  }
  return json as T;
}

/** Every item of a paged list route (`items`, `next_cursor`), up to `max`. */
export async function restAll<T>(path: string, max = 5000): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const page = await rest<{ items: T[]; next_cursor?: string }>("GET", `${path}${sep}limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor && items.length < max);
  return items;
}

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
  /** USD at the server's prices; 0 for a model without one. */
  cost_usd: number;
}

/** `GET /v1/budget`: the tenant's monthly limits (null: none) and this month's spend. */
export interface BudgetJson {
  month: string;
  monthly_tokens: number | null;
  monthly_cost_usd: number | null;
  spent_tokens: number;
  spent_cost_usd: number;
}

export interface SessionJson {
  id: string;
  environment_id: string;
  model: string;
  status: "active" | "detached" | "completed" | "cancelled" | "error";
  /** StartSession.title, or as renamed. */
  title?: string;
  metadata?: Record<string, string>;
  archived?: boolean;
  created_at: string;
  updated_at: string;
  ended_at?: string;
  /** Why an ended session ended. */
  end_reason?: "completed" | "client" | "abandoned" | "error";
  usage: Usage;
  turn_count: number;
  /** Streams attached now (servers that track it). */
  attached_streams?: number;
  /** The session's last response seq (servers that track it). */
  last_seq?: number;
}

export interface RuleJson {
  tool_pattern: string;
  policy: "allow" | "require_confirmation" | "deny";
  category?: "unspecified" | "physical" | "pure";
  reason?: string;
}

export interface EnvironmentJson {
  id: string;
  name: string;
  kind: string;
  default_model?: string;
  system_instructions?: string;
  permissions: RuleJson[];
  /** Whether its sessions' models get the team tools; absent: the server's ROZ_TEAMS_DEFAULT. */
  teams?: { enabled: boolean };
  is_default: boolean;
  created_at: string;
  updated_at: string;
}

export interface KeyJson {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  created_at: string;
  last_used_at?: string;
  revoked_at?: string;
  key?: string;
}

export interface TurnJson {
  seq: number;
  /** The turn's number in its session (1, 2, … in the order turns started). */
  turn: number;
  message_id: string;
  rolled_back?: boolean;
  forked_from?: { session_id: string; turn: number };
  user: { content: string };
  assistant: { text: string; thinking: string };
  tool_calls: { id: string; name: string; parameters: unknown; permission: string; success?: boolean; result?: string; error?: string }[];
  usage: Usage;
  stop_reason: string;
  error?: { code: string; message: string };
}

export const isLive = (s: Pick<SessionJson, "status">): boolean => s.status === "active" || s.status === "detached";
