// The SDK auth provider of an OAuth connection (src/mcp/oauth-client.ts) against a real
// authorization server: refreshes that race on a rotating refresh token both end authorized,
// and a connection never starts an authorization (that needs a user).
import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type GrantKeeper, OAuthClient, type OAuthGrant, REAUTHORIZE } from "../../src/mcp/index.ts";
import { startMcpServer, type TestMcpServer } from "../support/mcp-server.ts";
import { startOAuthServer, type TestOAuthServer } from "../support/oauth-server.ts";

let as: TestOAuthServer;
let mcp: TestMcpServer;
beforeAll(async () => {
  as = await startOAuthServer();
  mcp = await startMcpServer({ oauth: as });
});
afterAll(async () => {
  await mcp?.close();
  await as?.close();
});

/** An authorized grant, the way Register and the callback obtain one. */
async function authorized(): Promise<OAuthGrant> {
  const begin = new OAuthClient({ grant: { settings: { scopes: [] }, redirectUrl: "http://127.0.0.1:9/callback" }, fetch, interactive: { state: "s" } });
  expect(await auth(begin, { serverUrl: mcp.url })).toBe("REDIRECT");
  const back = new URL((await fetch(begin.authorizationUrl!, { redirect: "manual" })).headers.get("location")!);
  const finish = new OAuthClient({ grant: begin.grant, fetch, interactive: { verifier: begin.verifier! } });
  expect(await auth(finish, { serverUrl: mcp.url, authorizationCode: back.searchParams.get("code")! })).toBe("AUTHORIZED");
  return finish.grant;
}

/** A keeper over one variable: the store, for this test. */
function memoryKeeper(grant: OAuthGrant): GrantKeeper & { stored: OAuthGrant } {
  const keeper = {
    stored: grant,
    load: async () => keeper.stored,
    save: async (g: OAuthGrant) => {
      keeper.stored = g;
    },
  };
  return keeper;
}

it("two refreshes racing on one rotating refresh token both end authorized, with the newest tokens stored", async () => {
  const keeper = memoryKeeper(await authorized());
  const client = new OAuthClient({ grant: keeper.stored, fetch, keeper });
  const before = as.grants.refresh_token ?? 0;
  expect(await Promise.all([auth(client, { serverUrl: mcp.url }), auth(client, { serverUrl: mcp.url })])).toEqual(["AUTHORIZED", "AUTHORIZED"]);
  expect(as.grants.refresh_token).toBeGreaterThanOrEqual(before + 2);
  const now = (await client.tokens())!;
  expect(as.valid(now.access_token)).toBe(true);
  expect(keeper.stored.tokens).toEqual(now);
});

it("a connection whose refresh token is gone does not start an authorization: it says to register again", async () => {
  const full = await authorized();
  const grant = { ...full, tokens: { ...full.tokens!, refresh_token: undefined } };
  const client = new OAuthClient({ grant, fetch, keeper: memoryKeeper(grant) });
  as.expireAll();
  await expect(auth(client, { serverUrl: mcp.url })).rejects.toThrow(REAUTHORIZE);
  expect(client.authorizationUrl).toBeUndefined();
});
