/**
 * Turns for the scripted model whose outcome is known in advance: usage, stored text and
 * tool call are computed from the inline script, so a stored turn can be checked even when
 * no client saw its `turn_complete` (the server died just after storing it).
 */

/** Token usage as the REST API and `turn_complete` report it (numbers, REST field names). */
export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_creation_tokens: number;
}

/** The token counts of a REST usage (which also carries `cost_usd`). */
export const tokensOf = (u: Usage): Usage => ({
  input_tokens: u.input_tokens,
  output_tokens: u.output_tokens,
  cache_read_tokens: u.cache_read_tokens,
  cache_creation_tokens: u.cache_creation_tokens,
});

export const zeroUsage = (): Usage => ({ input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_creation_tokens: 0 });

export const addUsage = (a: Usage, b: Usage): Usage => ({
  input_tokens: a.input_tokens + b.input_tokens,
  output_tokens: a.output_tokens + b.output_tokens,
  cache_read_tokens: a.cache_read_tokens + b.cache_read_tokens,
  cache_creation_tokens: a.cache_creation_tokens + b.cache_creation_tokens,
});

/** The client tool every workload session registers (PURE: allowed without a question). */
export const LOOKUP_TOOL = "lookup";

/** One turn as planned: what to send, and what the server must store for it. */
export interface PlannedTurn {
  messageId: string;
  /** The user message (an inline script). */
  content: string;
  /** Sum of the usage steps of every model call of the turn. */
  usage: Usage;
  /** The record's assistant text: each model call's text, calls separated by a blank line. */
  text: string;
  /** The tool call the turn makes (the client answers it with `result`), if any. */
  tool?: { id: string; key: string; result: string };
}

type Step = Record<string, unknown>;

const int = (lo: number, hi: number): number => lo + Math.floor(Math.random() * (hi - lo + 1));

const randomUsage = (): Usage => ({
  input_tokens: int(50, 5000),
  output_tokens: int(1, 400),
  cache_read_tokens: int(0, 2000),
  cache_creation_tokens: int(0, 300),
});

/**
 * A turn of one or two model calls with small delays between its deltas (so a kill lands
 * mid-stream), distinct usage per call, and — when `withTool` — a `lookup` call whose
 * result the client sends back.
 */
export function planTurn(messageId: string, withTool: boolean, maxDelayMs = 40): PlannedTurn {
  const delay = (): Step => ({ delay_ms: int(5, maxDelayMs) });
  const first = randomUsage();
  if (!withTool) {
    const a = `Answer to ${messageId} begins`;
    const b = ` and ends here.`;
    const steps = [{ thinking: `thinking about ${messageId}` }, delay(), { text: a }, delay(), { text: b }, { usage: first }];
    return { messageId, content: scriptMessage([steps]), usage: first, text: a + b };
  }
  const second = randomUsage();
  const id = `call-${messageId}`;
  const key = `key-${messageId}`;
  const before = `Looking up ${key}.`;
  const after = `The value of ${key} arrived.`;
  const responses = [
    [{ thinking: `need ${key}` }, delay(), { text: before }, { tool_call: { id, name: LOOKUP_TOOL, arguments: { key } } }, { usage: first }],
    [delay(), { text: after }, delay(), { usage: second }],
  ];
  return {
    messageId,
    content: scriptMessage(responses),
    usage: addUsage(first, second),
    text: `${before}\n\n${after}`,
    tool: { id, key, result: `value of ${key}` },
  };
}

const scriptMessage = (responses: Step[][]): string => `script:${JSON.stringify({ responses })}`;
