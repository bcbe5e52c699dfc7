/**
 * Section "mcp": what roz adds to an MCP tool call. Through roz: a turn whose scripted model
 * calls `mcp__bench__echo` once, against the same turn shape with no tool (the model's extra
 * cycle is in-process and cheap), so the difference is the call as roz makes it (permission
 * screening, the SDK client's request, the result joined into the history). The baseline is
 * the SDK client calling the same MCP server directly. Both ends run in this process.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startMcpServer } from "../test/support/mcp-server.ts";
import { startServer } from "../test/support/server.ts";
import { connectClients, expect, finish, startSession, userMessage } from "./client.ts";
import { type BenchOptions, ms, now, pick, progress, type Row, summarize } from "./support.ts";

const ADDED_P50_TARGET_MS = 5;
const script = (responses: unknown[]) => `script: ${JSON.stringify({ responses })}`;

export async function runMcp(options: BenchOptions): Promise<Row[]> {
  const calls = pick(options, 300, 60);
  const warmup = 20;
  const mcp = await startMcpServer();
  const server = await startServer({
    ROZ_DEFAULT_MODEL: "scripted/default",
    ROZ_MCP_ALLOW_PRIVATE: "1",
    ROZ_PERMISSION_RULES: JSON.stringify([{ tool_pattern: "mcp__bench__*", policy: "allow" }]),
  });
  const conn = connectClients(server.url, 1);
  const direct = new Client({ name: "bench", version: "1" });
  try {
    const registered = await fetch(`${server.url}/v1/mcp-servers`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "bench", url: mcp.url }),
    });
    if (registered.status !== 201) throw new Error(`registering the MCP server answered ${registered.status}`);
    const { stream } = await startSession(conn.clients[0]!);
    const turn = async (content: string): Promise<number> => {
      const started = now();
      stream.send(userMessage(content));
      await expect(stream, "turnComplete");
      return now() - started;
    };
    const withTool = script([[{ tool_call: { name: "mcp__bench__echo", arguments: { text: "x" } } }], [{ text: "ok" }]]);
    const withoutTool = script([[{ text: "thinking" }], [{ text: "ok" }]]);
    progress(`mcp: ${calls} turns with an MCP call and ${calls} without`);
    const through: number[] = [];
    const plain: number[] = [];
    for (let i = 0; i < calls + warmup; i++) {
      const a = await turn(withTool);
      const b = await turn(withoutTool);
      if (i >= warmup) {
        through.push(a);
        plain.push(b);
      }
    }
    await finish(stream);
    await direct.connect(new StreamableHTTPClientTransport(new URL(mcp.url)));
    const directMs: number[] = [];
    for (let i = 0; i < calls + warmup; i++) {
      const started = now();
      await direct.callTool({ name: "echo", arguments: { text: "x" } });
      if (i >= warmup) directMs.push(now() - started);
    }
    const t = summarize(through);
    const p = summarize(plain);
    const d = summarize(directMs);
    const added = t.p50 - p.p50 - d.p50;
    return [
      { metric: "turn with one MCP call, p50 / p99", measured: `${ms(t.p50)} / ${ms(t.p99)}`, value: t.p50 },
      { metric: "same turn without a tool, p50", measured: ms(p.p50), value: p.p50 },
      { metric: "SDK client calling the server directly, p50 / p99", measured: `${ms(d.p50)} / ${ms(d.p99)}`, value: d.p50 },
      {
        metric: "added by roz to one MCP call, p50",
        target: `≤ ${ADDED_P50_TARGET_MS} ms`,
        measured: ms(added),
        ok: added <= ADDED_P50_TARGET_MS,
        value: added,
      },
    ];
  } finally {
    await direct.close().catch(() => undefined);
    conn.close();
    await server.close();
    await mcp.close();
  }
}
