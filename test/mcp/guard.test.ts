// The pieces under the MCP service: the address guard (by literal, by DNS, through redirects),
// sealed credentials, and McpServerDegraded on the flat (105) and envelope (44) wires.
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/app/config.ts";
import { AddressGuard, guardedFetch, type Lookup, parseSecretKey, SecretBox } from "../../src/mcp/index.ts";
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

  it("checks each redirect target before following it", async () => {
    const reached: string[] = [];
    const inner = async (url: string | URL) => {
      reached.push(String(url));
      if (String(url).startsWith("https://public.test/")) return new Response(null, { status: 307, headers: { location: "http://169.254.169.254/latest" } });
      return new Response("ok");
    };
    const fetchGuarded = guardedFetch(guard, inner);
    await expect(fetchGuarded("https://public.test/mcp", { method: "POST", body: "{}" })).rejects.toThrow(/169\.254\.169\.254/);
    expect(reached).toEqual(["https://public.test/mcp"]);
    await expect(fetchGuarded("http://inside.test/mcp")).rejects.toThrow(/10\.0\.0\.7/);
    expect(reached).toHaveLength(1);
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
