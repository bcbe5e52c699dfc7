/** The world of the spend tests: the session fixture with prices in its providers file, and reading what the server says a call cost. */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { type FixtureOptions, type SessionFixture, startSessionFixture } from "../session/fixture.ts";

/** USD per million tokens of `openai/fake-model`; `openai/free-model` has no price. */
export const FAKE_PRICE = { input: 2, output: 10, cache_read: 0.5, cache_write: 4 } as const;
/** Of every `scripted/…` model. */
export const SCRIPTED_PRICE = { input: 1, output: 2, cache_read: 0.25, cache_write: 1.25 } as const;

/** The session fixture (provider `openai` on the fake) whose providers file prices `fake-model` and the scripted models. */
export async function startSpendFixture(options: Pick<FixtureOptions, "env"> = {}): Promise<SessionFixture & { dispose(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "roz-spend-"));
  const file = join(dir, "providers.json");
  await writeFile(
    file,
    JSON.stringify({
      providers: {
        openai: { prices: { "fake-model": FAKE_PRICE } },
        scripted: { prices: { "*": SCRIPTED_PRICE } },
      },
    }),
  );
  const fx = await startSessionFixture({ ...options, env: { ROZ_PROVIDERS_FILE: file, ...options.env } });
  return Object.assign(fx, {
    async dispose() {
      await fx.close();
      await rm(dir, { recursive: true, force: true });
    },
  });
}

/** What `usage` costs at `price` (the test's own arithmetic, not the server's). */
export function expectedCost(
  usage: { input: number; output: number; cacheRead?: number; cacheWrite?: number },
  price: { input: number; output: number; cache_read: number; cache_write: number },
): number {
  const cacheRead = usage.cacheRead ?? 0;
  const cacheWrite = usage.cacheWrite ?? 0;
  return (
    ((usage.input - cacheRead - cacheWrite) * price.input + cacheRead * price.cache_read + cacheWrite * price.cache_write + usage.output * price.output) / 1e6
  );
}

/** The value of `roz_cost_usd_total{tenant, model}` on `/metrics` (undefined when the series is absent). */
export async function metricCost(url: string, model: string, tenant = "default"): Promise<number | undefined> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`roz_cost_usd_total{tenant="${tenant}",model="${model}"}`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

/** `GET /v1/sessions/{id}` and its turns, as REST shows their usage. */
export async function restUsage(fx: SessionFixture, sessionId: string): Promise<{ session: any; turns: any[] }> {
  const session = await fx.rest("GET", `/v1/sessions/${sessionId}`);
  expect(session.status).toBe(200);
  const messages = await fx.rest("GET", `/v1/sessions/${sessionId}/messages?format=turns`);
  expect(messages.status).toBe(200);
  return { session: session.json, turns: messages.json.turns };
}
