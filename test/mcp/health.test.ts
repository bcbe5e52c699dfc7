// §12 health: three consecutive failures degrade a server once, background probes retry it
// with growing waits, and a success makes it healthy again.
import { expect, it } from "vitest";
import { McpHealth } from "../../src/mcp/index.ts";
import type { McpHealthChange, McpServerRecord } from "../../src/store/index.ts";

const record = (over: Partial<McpServerRecord> = {}): McpServerRecord => ({
  id: "id-1",
  tenantId: "t",
  name: "gh",
  url: "http://x/mcp",
  enabled: true,
  authKind: "none",
  health: "healthy",
  failureCount: 0,
  createdAt: 0,
  updatedAt: 0,
  ...over,
});

it("degrades on the third failure, tells listeners once, probes in the background until a success", async () => {
  const writes: McpHealthChange[] = [];
  const probes: McpServerRecord[] = [];
  const health = new McpHealth({
    store: {
      setMcpServerHealth: async (_id, change) => {
        writes.push(change);
        return true;
      },
    },
    probe: async (server) => {
      probes.push(server);
    },
    log: { warn: () => undefined },
    retryFirstMs: 20,
  });
  const told: string[] = [];
  const off = health.onDegraded((d) => told.push(`${d.serverName}:${d.failureCount}:${d.lastError}`));
  let server = record();
  server = await health.failed(server, "e1");
  server = await health.failed(server, "e2");
  expect(server.health).toBe("healthy");
  server = await health.failed(server, "e3");
  expect(server).toMatchObject({ health: "degraded", failureCount: 3, lastError: "e3" });
  expect(server.degradedAt).toEqual(expect.any(Number));
  expect(told).toEqual(["gh:3:e3"]);
  await expect.poll(() => probes.length).toBe(1);
  // A failed probe keeps it degraded, says nothing new, and schedules the next probe.
  server = await health.failed(server, "e4");
  expect(told).toHaveLength(1);
  await expect.poll(() => probes.length).toBe(2);
  server = await health.succeeded(server);
  expect(server).toMatchObject({ health: "healthy", failureCount: 0 });
  expect(writes.at(-1)).toEqual({ health: "healthy", failureCount: 0, degradedAt: null, lastError: null });
  off();
  health.close();
});
