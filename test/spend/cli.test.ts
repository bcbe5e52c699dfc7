// `roz budgets …`: the operator sets a tenant's monthly budget with the real CLI, in a child
// process against the store of a running server (SQLite data folder, or PostgreSQL); the tenant's
// own key reads it with GET /v1/budget, and the server's next model call obeys it.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { script } from "../conformance/support.ts";
import { makeKey, request, startAuthServer, type TestKey } from "../rest/support.ts";
import { postgresForTests } from "../support/postgres.ts";
import { runCli, type TestServer } from "../support/server.ts";
import { sessionClientFactory } from "../support/session-client.ts";
import { readTurn, rq, startSession, turnCompleteOf } from "../support/session-protocol.ts";

const pg = await postgresForTests();
/** Each test runs the CLI several times, one process after another (a few seconds each on a busy machine). */
const CLI_TEST_TIMEOUT_MS = 120_000;

describe.each([
  ["SQLite", false],
  ["PostgreSQL", true],
] as const)("roz budgets on %s", (_name, postgres) => {
  let dataDir: string;
  let store: Record<string, string>;
  let server: TestServer;
  let key: TestKey;
  const roz = (...args: string[]) => runCli(args, store);

  beforeAll(async () => {
    if (postgres && pg === undefined) return;
    dataDir = await mkdtemp(join(tmpdir(), "roz-budgets-"));
    store = postgres ? { ROZ_DATA_DIR: dataDir, DATABASE_URL: await pg!.createDatabase() } : { ROZ_DATA_DIR: dataDir };
    server = await startAuthServer(store);
    key = await makeKey(server, "acme", ["sessions"]);
  });
  afterAll(async () => {
    await server?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it.skipIf(postgres && pg === undefined)(
    "set, show and clear a tenant's limits; its key reads them and its next turn obeys them",
    async () => {
      const set = await roz("budgets", "set", "--tenant", "acme", "--monthly-tokens", "0", "--monthly-cost-usd", "2.5");
      expect(set.code, set.stderr).toBe(0);
      expect(set.stdout).toMatch(/monthly tokens\s+0 tokens \(spent 0\)/);
      expect(set.stdout).toMatch(/monthly cost\s+2\.5 USD/);
      const read = await request(server.url, "GET", "/v1/budget", { key: key.secret });
      expect(read.status).toBe(200);
      expect(read.json).toEqual({ month: new Date().toISOString().slice(0, 7), monthly_tokens: 0, monthly_cost_usd: 2.5, spent_tokens: 0, spent_cost_usd: 0 });

      // The running server obeys it at the next model call: a limit of 0 allows none.
      const clients = sessionClientFactory("grpc-js", server.url);
      try {
        const client = clients.open({ authorization: `Bearer ${key.secret}` });
        await startSession(client, { model: "scripted/default" });
        client.send(rq.user(script([[{ text: "never" }]])));
        expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("budget_exceeded");

        const cleared = await roz("budgets", "set", "--tenant", "acme", "--monthly-tokens", "none");
        expect(cleared.code, cleared.stderr).toBe(0);
        const shown = await roz("budgets", "show", "--tenant", "acme");
        expect(shown.stdout).toMatch(/monthly tokens\s+none/);
        expect(shown.stdout).toMatch(/monthly cost\s+2\.5 USD/);
        expect((await request(server.url, "GET", "/v1/budget", { key: key.secret })).json).toMatchObject({ monthly_tokens: null, monthly_cost_usd: 2.5 });
        client.send(rq.user(script([[{ text: "now" }, { usage: { input_tokens: 7, output_tokens: 3 } }]])));
        expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
        expect((await request(server.url, "GET", "/v1/budget", { key: key.secret })).json).toMatchObject({ spent_tokens: 10 });
        client.end();
      } finally {
        clients.close();
      }
    },
    CLI_TEST_TIMEOUT_MS,
  );

  // Usage does not depend on the store: checked once.
  it.skipIf(postgres)(
    "refuses bad usage with exit code 2 and a message",
    async () => {
      const cases: [string[], string][] = [
        [["budgets", "set", "--tenant", "acme"], "name --monthly-tokens, --monthly-cost-usd or both"],
        [["budgets", "set", "--tenant", "acme", "--monthly-tokens", "1.5", "--monthly-cost-usd=-1"], "expected a whole number of tokens"],
        [["budgets", "show", "--tenant", "nobody"], 'no tenant named "nobody"'],
      ];
      for (const [args, message] of cases) {
        const result = await roz(...args);
        expect(result.code, args.join(" ")).toBe(2);
        expect(result.stderr).toContain(message);
      }
      const help = await roz("--help");
      expect(help.stdout).toContain("roz budgets set --tenant NAME");
      expect((await roz("budgets", "--help")).stdout).toContain("roz budgets show --tenant NAME");
    },
    CLI_TEST_TIMEOUT_MS,
  );
});
