// DESIGN.md's configuration table as clients and operators see it, through real sessions.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../../src/app/app.ts";
import { loadConfig } from "../../src/app/config.ts";
import { sessionClientFactory } from "../support/session-client.ts";
import { rq, startSession } from "../support/session-protocol.ts";
import { startWorld, type World } from "./support.ts";

let world: World | undefined;
afterEach(async () => {
  await world?.reset();
  await world?.close();
  world = undefined;
});

describe("ROZ_DEFAULT_MODEL: the first configured provider's default, else scripted/default", () => {
  it.each<{ name: string; env: Record<string, string>; model: string }>([
    { name: "no provider configured", env: {}, model: "scripted/default" },
    { name: "OPENAI_API_KEY (OpenAI itself)", env: { OPENAI_API_KEY: "sk-test" }, model: "openai/gpt-4.1-mini" },
    { name: "ROZ_DEFAULT_MODEL set", env: { OPENAI_API_KEY: "sk-test", ROZ_DEFAULT_MODEL: "scripted/default" }, model: "scripted/default" },
  ])("$name → SessionStarted.model $model for a start without model", async ({ env, model }) => {
    world = await startWorld(env);
    const { started } = await world.start("connect");
    expect(started.model).toBe(model);
  });
});

describe("defaults a client suite relies on", () => {
  it("a server with default settings lets one caller start well over a hundred sessions within a minute", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "roz-conformance-"));
    // Only what a test environment must set: everything else at its default.
    const app = await createApp(loadConfig({ ROZ_PORT: "0", ROZ_DATA_DIR: dataDir, ROZ_LOG_LEVEL: "silent" }));
    const factory = sessionClientFactory("connect", await app.listen());
    try {
      for (let batch = 0; batch < 15; batch++) {
        await Promise.all(
          Array.from({ length: 10 }, async () => {
            const client = factory.open();
            await startSession(client);
            client.send(rq.cancelSession());
            client.end();
            expect((await client.status).code).toBe(0);
          }),
        );
      }
    } finally {
      factory.close();
      await app.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
