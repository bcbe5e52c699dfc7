/**
 * Chat Completions chunks for the fake OpenAI server whose text carries the moment the
 * fake serialized them: each content delta is `<ms>;` on the machine's monotonic clock
 * (`monoMs`, shared by all processes). The fake calls `JSON.stringify` on a frame right
 * before writing it (and, without `tokens`, flushes every frame), so a client in any
 * process can compute how long a delta took from the fake's socket write to its own hands.
 */
import type { FakeReply } from "../test/support/fake-openai/index.ts";
import { monoMs } from "./support.ts";

/** A reply of `tokens` timestamped deltas paced at `rate` frames per second. */
export function timedReply(tokens: number, rate: number): FakeReply {
  const base = { id: "chatcmpl-bench", object: "chat.completion.chunk", created: 0, model: "fake-model", system_fingerprint: "fp_bench" };
  const chunk = (delta: object, finish: string | null = null) => ({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
  // One object serves every frame: toJSON runs anew at each serialization.
  const stamped = chunk({ toJSON: () => ({ content: `${monoMs().toFixed(3)};` }) });
  const frames: object[] = [
    chunk({ role: "assistant", content: "", refusal: null }),
    ...Array<object>(tokens).fill(stamped),
    chunk({}, "stop"),
    { ...base, choices: [], usage: { prompt_tokens: 10, completion_tokens: tokens, total_tokens: 10 + tokens } },
  ];
  return { frames, rate };
}

/** The send times embedded in a delta's text (several when deltas were merged). */
export function stampsOf(text: string): number[] {
  const out: number[] = [];
  for (const part of text.split(";")) if (part !== "") out.push(Number(part));
  return out;
}
