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
 * §12), by literal or by what DNS answers; `allowPrivate` (ROZ_MCP_ALLOW_PRIVATE=1) turns it off.
 * `check` is the full check of a URL (registration); `checkTarget` and `resolve` split it for a
 * connection, so that the addresses checked are the ones connected to (pinned-fetch.ts).
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
    const target = this.checkTarget(url);
    const host = hostOf(target);
    if (!this.#allowPrivate && isIP(host) === 0) await this.resolve(host);
  }

  /**
   * Throws unless `url` is http(s) and, when its host is an address literal, an allowed one.
   * A host name is checked when it is resolved for the connection (`resolve`).
   */
  checkTarget(url: string | URL): URL {
    const parsed = url instanceof URL ? url : URL.canParse(url) ? new URL(url) : undefined;
    if (parsed === undefined || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
      throw new RozError("invalid_argument", "an MCP server URL must be an http:// or https:// URL");
    }
    const host = hostOf(parsed);
    if (!this.#allowPrivate && isIP(host) !== 0) this.#refuseForbidden(host, [host]);
    return parsed;
  }

  /** Every address of `host`; throws unless all of them are allowed (one forbidden refuses the name). */
  async resolve(host: string): Promise<{ address: string; family: number }[]> {
    let found: { address: string; family: number }[];
    try {
      found = await this.#lookup(host);
      if (found.length === 0) throw new Error("no addresses");
    } catch (err) {
      throw new RozError("invalid_argument", `MCP server host ${host} does not resolve`, { cause: err });
    }
    if (!this.#allowPrivate)
      this.#refuseForbidden(
        host,
        found.map((a) => a.address),
      );
    return found;
  }

  #refuseForbidden(host: string, addresses: string[]): void {
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
}

const hostOf = (url: URL): string => url.hostname.replace(/^\[|\]$/g, "");
