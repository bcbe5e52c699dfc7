// The pieces under the MCP service: the address guard (by literal, by DNS, through redirects),
// sealed credentials, and McpServerDegraded on the flat (105) and envelope (44) wires.
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/app/config.ts";
import { AddressGuard, guardedFetch, type Lookup, parseSecretKey, pinnedFetch, SecretBox } from "../../src/mcp/index.ts";
import { envelopesOf, envelopeStreamState } from "../../src/rpc/to-envelope.ts";
import { responseToWire } from "../../src/rpc/to-wire.ts";

const dns: Record<string, string[]> = { "public.test": ["93.184.216.34"], "inside.test": ["10.0.0.7"], "mixed.test": ["93.184.216.34", "127.0.0.1"] };
const lookup: Lookup = async (host) => (dns[host] ?? []).map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));

describe("AddressGuard", () => {
  const guard = new AddressGuard(false, lookup);

  it("lets public addresses through and refuses private ones, by literal or by what DNS answers", async () => {
    await guard.check("https://public.test/mcp");
    await guard.check("http://93.184.216.34/mcp");
    for (const url of [
      "http://127.0.0.1/",
      "http://169.254.169.254/latest/meta-data",
      "http://192.168.1.1/",
      "http://172.20.0.1/",
      "http://100.100.100.200/",
      "http://[fd00:ec2::254]/",
      "http://[fe80::1]/",
      "http://[::ffff:169.254.169.254]/",
      "http://0.0.0.0/",
      "http://inside.test/",
      "http://mixed.test/",
    ]) {
      await expect(guard.check(url), url).rejects.toMatchObject({ code: "invalid_argument" });
    }
    await expect(guard.check("http://nowhere.test/")).rejects.toThrow(/does not resolve/);
    await expect(guard.check("file:///etc/passwd")).rejects.toThrow(/http/);
  });

  it("ROZ_MCP_ALLOW_PRIVATE lets private addresses through, but not other schemes", async () => {
    const open = new AddressGuard(true, lookup);
    await open.check("http://127.0.0.1:9/mcp");
    await expect(open.check("gopher://127.0.0.1/")).rejects.toThrow(/http/);
  });

  it("checks a redirect to another origin and does not follow it; follows within the origin", async () => {
    const reached: string[] = [];
    const inner = async (url: string | URL) => {
      reached.push(String(url));
      if (String(url).endsWith("/metadata")) return new Response(null, { status: 307, headers: { location: "http://169.254.169.254/latest" } });
      if (String(url).endsWith("/inside")) return new Response(null, { status: 302, headers: { location: "http://inside.test/" } });
      if (String(url).endsWith("/away")) return new Response(null, { status: 302, headers: { location: "https://other.test/x" } });
      if (String(url).endsWith("/moved")) return new Response(null, { status: 308, headers: { location: "/mcp" } });
      return new Response("ok");
    };
    const fetchGuarded = guardedFetch(guard, inner);
    await expect(fetchGuarded("https://public.test/metadata", { method: "POST", body: "{}" })).rejects.toThrow(/169\.254\.169\.254/);
    expect(reached).toEqual(["https://public.test/metadata"]);
    // Another origin is never reached (no credential header travels there): the redirect comes back.
    expect((await fetchGuarded("https://public.test/inside")).status).toBe(302);
    expect((await fetchGuarded("https://public.test/away")).status).toBe(302);
    expect(await (await fetchGuarded("https://public.test/moved", { method: "POST", body: "{}" })).text()).toBe("ok");
    expect(reached.slice(1)).toEqual(["https://public.test/inside", "https://public.test/away", "https://public.test/moved", "https://public.test/mcp"]);
    await expect(fetchGuarded("http://10.1.2.3/mcp")).rejects.toThrow(/10\.1\.2\.3/);
    expect(reached).toHaveLength(5);
  });
});

describe("DNS pinning: the addresses checked are the addresses connected to", () => {
  let local: Server;
  let port = 0;
  const hits: string[] = [];
  beforeAll(async () => {
    local = createServer((req, res) => {
      hits.push(String(req.headers.host));
      res.end("reached");
    });
    await new Promise<void>((resolve) => local.listen(0, "127.0.0.1", resolve));
    port = (local.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => local.close(() => resolve())));

  /** A guard whose resolver answers from `answer`. */
  const guardWith = (allowPrivate: boolean, answer: (host: string) => string[]) =>
    new AddressGuard(allowPrivate, async (host) => answer(host).map((address) => ({ address, family: 4 })));

  it("the socket connects to what the guard's resolver answered, not to what the system resolves", async () => {
    const open = guardWith(true, (host) => (host === "pinned.test" ? ["127.0.0.1"] : []));
    const pinned = pinnedFetch(open);
    const get = guardedFetch(open, pinned.fetch);
    try {
      // The system resolver knows no pinned.test: only the guard's answer can reach the server.
      const res = await get(`http://pinned.test:${port}/mcp`);
      expect(await res.text()).toBe("reached");
      expect(hits).toEqual([`pinned.test:${port}`]);
    } finally {
      pinned.close();
    }
  });

  it("a name whose answer turns private after it was checked is refused at connect, with nothing reached", async () => {
    let answers = 0;
    // The first answer (the registration's check) is public; every later one is loopback.
    const strict = guardWith(false, (host) => (host === "rebind.test" ? (answers++ === 0 ? ["93.184.216.34"] : ["127.0.0.1"]) : (dns[host] ?? [])));
    const pinned = pinnedFetch(strict);
    try {
      await strict.check(`http://rebind.test:${port}/mcp`);
      const before = hits.length;
      await expect(guardedFetch(strict, pinned.fetch)(`http://rebind.test:${port}/mcp`)).rejects.toThrow(/resolves to 127\.0\.0\.1.*ROZ_MCP_ALLOW_PRIVATE/);
      await expect(guardedFetch(strict, pinned.fetch)(`http://inside.test:${port}/`)).rejects.toThrow(/resolves to 10\.0\.0\.7/);
      expect(hits.length).toBe(before);
    } finally {
      pinned.close();
    }
  });
});

describe("SecretBox", () => {
  it("parses 32-byte keys as hex or base64 only", () => {
    const bytes = randomBytes(32);
    expect(parseSecretKey(bytes.toString("hex"))?.equals(bytes)).toBe(true);
    expect(parseSecretKey(bytes.toString("base64"))?.equals(bytes)).toBe(true);
    expect(parseSecretKey("short")).toBeUndefined();
    expect(parseSecretKey(randomBytes(16).toString("hex"))).toBeUndefined();
  });

  it("a ROZ_SECRET_KEY that is not 32 bytes refuses to start, without echoing it", () => {
    expect(() => loadConfig({ ROZ_SECRET_KEY: "not-a-key-secretish" })).toThrow(/ROZ_SECRET_KEY: expected 32 random bytes/);
    expect(() => loadConfig({ ROZ_SECRET_KEY: "not-a-key-secretish" })).not.toThrow(/secretish/);
    expect(loadConfig({ ROZ_SECRET_KEY: randomBytes(32).toString("base64") }).secretKey).toBeDefined();
  });

  it("seals so that only the same key and owner open it", () => {
    const box = new SecretBox(randomBytes(32));
    const sealed = box.seal("s3cret", "tenant/gh");
    expect(sealed).not.toContain("s3cret");
    expect(box.open(sealed, "tenant/gh")).toBe("s3cret");
    expect(() => box.open(sealed, "tenant/other")).toThrow(/do not open/);
    expect(() => new SecretBox(randomBytes(32)).open(sealed, "tenant/gh")).toThrow(/do not open/);
  });
});

describe("McpServerDegraded on the wire", () => {
  const event = { type: "mcp_server_degraded" as const, serverName: "gh", failureCount: 3, lastError: "HTTP 503" };

  it("is flat field 105 and envelope field 44", () => {
    const flat = responseToWire({ seq: 7, event });
    expect(flat.response.case).toBe("mcpServerDegraded");
    expect(flat.response.value).toMatchObject({ serverName: "gh", failureCount: 3, lastError: "HTTP 503" });
    const [envelope] = envelopesOf({ seq: 7, event, sessionId: "s", at: 1 }, envelopeStreamState()) ?? [];
    expect(envelope?.eventType).toBe("mcp_server_degraded");
    expect(envelope?.typedEvent.case).toBe("mcpServerDegraded");
    expect(envelope?.typedEvent.value).toMatchObject({ serverName: "gh", failureCount: 3, lastError: "HTTP 503" });
  });
});
