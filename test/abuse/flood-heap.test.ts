// A flood of short-lived HTTP/2 streams must not leave the real `roz` process holding hundreds
// of megabytes: V8's young generation keeps its size while the flood lasts, and the old
// generation grows by a bounded share of what it keeps alive.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { noStartAttack, rapidResetAttack } from "../support/attacks.ts";
import { heapSpaceSize, spawnServer, type SpawnedServer } from "../support/server.ts";

const MB = 1024 * 1024;
/** Runs `attack` while sampling the size V8 gives `space`; resolves with the largest seen. */
async function largestDuring(url: string, space: string, attack: Promise<void>): Promise<number> {
  let largest = await heapSpaceSize(url, space);
  let done = false;
  const sampling = (async () => {
    while (!done) {
      largest = Math.max(largest, await heapSpaceSize(url, space));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  try {
    await attack;
  } finally {
    done = true;
    await sampling;
  }
  return largest;
}

describe("V8's heap under stream floods (real roz process)", () => {
  let server: SpawnedServer;
  beforeAll(async () => {
    server = await spawnServer({ ROZ_START_TIMEOUT_MS: "300", ROZ_MAX_STREAMS_PER_KEY: "50" });
  });
  afterAll(() => server?.dispose());

  it("the young generation stays within 16 MB (128 MB without the limit)", async () => {
    const largest = await largestDuring(server.url, "new", rapidResetAttack(30_000)(server.url));
    // Without the limit: 8 MB before, 128 MB during the flood (the first streams, before the
    // flood is seen, may still grow it once).
    expect(largest / MB).toBeLessThanOrEqual(16);
  }, 60_000);

  it("the old generation stays near what it keeps alive", async () => {
    const largest = await largestDuring(server.url, "old", noStartAttack(6_000)(server.url));
    // About 70 MB measured; with V8's own growth rule, 200 MB.
    expect(largest / MB).toBeLessThan(130);
  }, 60_000);
});
