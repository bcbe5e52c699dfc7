import { lookup as dnsLookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";
import { RozError } from "../errors/index.ts";

/** Resolves a host name to all its addresses (injectable for tests). */
export type Lookup = (host: string) => Promise<{ address: string; family: number }[]>;

const defaultLookup: Lookup = (host) => dnsLookup(host, { all: true, verbatim: true });

/** Loopback, private, link-local (cloud metadata lives there), shared, multicast and reserved ranges. */
function forbiddenRanges(): BlockList {
  const list = new BlockList();
  for (const [net, prefix] of [
    ["0.0.0.0", 8],
    ["10.0.0.0", 8],
    ["100.64.0.0", 10],
    ["127.0.0.0", 8],
    ["169.254.0.0", 16],
    ["172.16.0.0", 12],
    ["192.0.0.0", 24],
    ["192.168.0.0", 16],
    ["198.18.0.0", 15],
    ["224.0.0.0", 3],
  ] as const)
    list.addSubnet(net, prefix, "ipv4");
  for (const [net, prefix] of [
    ["::", 127],
    ["fc00::", 7],
    ["fe80::", 10],
    ["ff00::", 8],
  ] as const)
    list.addSubnet(net, prefix, "ipv6");
  return list;
}

/** The IPv4 address inside an IPv4-mapped or NAT64 IPv6 address, if it is one. */
function embeddedIpv4(address: string): string | undefined {
  const m = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return m?.[1];
}

/**
 * Refuses URLs that reach loopback, private, link-local or metadata addresses (session-behaviour
 * §12), by literal or by what DNS answers now; `allowPrivate` (ROZ_MCP_ALLOW_PRIVATE=1) turns it off.
 */
export class AddressGuard {
  readonly #allowPrivate: boolean;
  readonly #lookup: Lookup;
  readonly #ranges = forbiddenRanges();

  constructor(allowPrivate: boolean, lookup: Lookup = defaultLookup) {
    this.#allowPrivate = allowPrivate;
    this.#lookup = lookup;
  }

  /** Throws `invalid_argument` naming the reason unless `url` is http(s) to allowed addresses. */
  async check(url: string): Promise<void> {
    const parsed = URL.canParse(url) ? new URL(url) : undefined;
    if (parsed === undefined || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
      throw new RozError("invalid_argument", "an MCP server URL must be an http:// or https:// URL");
    }
    if (this.#allowPrivate) return;
    const host = parsed.hostname.replace(/^\[|\]$/g, "");
    const addresses = isIP(host) !== 0 ? [host] : (await this.#resolve(host)).map((a) => a.address);
    for (const address of addresses) {
      if (this.#forbidden(address)) {
        throw new RozError(
          "invalid_argument",
          `MCP server host ${host} resolves to ${address}, a loopback, private, link-local or metadata address (ROZ_MCP_ALLOW_PRIVATE=1 allows it)`,
        );
      }
    }
  }

  #forbidden(address: string): boolean {
    const v4 = embeddedIpv4(address);
    if (v4 !== undefined) return this.#ranges.check(v4, "ipv4");
    return this.#ranges.check(address, isIP(address) === 6 ? "ipv6" : "ipv4");
  }

  async #resolve(host: string): Promise<{ address: string }[]> {
    try {
      const found = await this.#lookup(host);
      if (found.length === 0) throw new Error("no addresses");
      return found;
    } catch (err) {
      throw new RozError("invalid_argument", `MCP server host ${host} does not resolve`, { cause: err });
    }
  }
}
