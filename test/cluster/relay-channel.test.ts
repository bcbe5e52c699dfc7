import { afterEach, describe, expect, it, vi } from "vitest";
import { createMemoryBus, type EventBus } from "../../src/bus/index.ts";
import { createNodeChannel, createSessionRelay, createSessionRouting, type RelayHost, type SessionRelay } from "../../src/cluster/index.ts";
import { RozError } from "../../src/errors/index.ts";
import type { SessionStream, StreamItem } from "../../src/session/index.ts";

/** A hosted stream's stand-in: items pushed by the test or by the fake host come out of `output`. */
class FakeStream {
  readonly items: StreamItem[] = [];
  readonly calls: string[] = [];
  #wake: (() => void) | undefined;
  #ended = false;

  push(item: StreamItem): void {
    this.items.push(item);
    this.#wake?.();
  }

  end(): void {
    this.#ended = true;
    this.#wake?.();
  }

  readonly output: AsyncIterable<StreamItem> = {
    [Symbol.asyncIterator]: () => ({
      next: async (): Promise<IteratorResult<StreamItem>> => {
        while (this.items.length === 0 && !this.#ended) await new Promise<void>((resolve) => (this.#wake = resolve));
        const item = this.items.shift();
        return item === undefined ? { done: true, value: undefined } : { done: false, value: item };
      },
    }),
  };

  async resume(sessionId: string, afterSeq: number): Promise<void> {
    this.calls.push(`resume ${sessionId} ${afterSeq}`);
  }

  async requestsEnded(): Promise<void> {
    this.calls.push("requestsEnded");
    this.end();
  }

  async fail(error: RozError): Promise<void> {
    this.calls.push(`fail ${error.reason}`);
    this.push({ kind: "fatal", error });
    this.end();
  }

  transportBroken(): void {
    this.calls.push("transportBroken");
    this.end();
  }
}

const bytes = (...values: number[]): Uint8Array => new Uint8Array(values);
const event = (seq: number, data: Uint8Array): StreamItem => ({ kind: "event", item: { seq, bytes: data } });
const principal = { tenantId: "t1", scopes: ["sessions"], keyId: "k1" };

/** A bus that loses line messages while `dropping` is set (core NATS while a node reconnects). */
function lossyBus(bus: EventBus): EventBus & { dropping: boolean } {
  const state = { dropping: false };
  return new Proxy(bus, {
    get(target, key) {
      if (key === "dropping") return state.dropping;
      if (key === "send") return (...args: Parameters<EventBus["send"]>) => (state.dropping ? undefined : target.send(...args));
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
    set(_target, key, value) {
      if (key !== "dropping") return false;
      state.dropping = value as boolean;
      return true;
    },
  }) as EventBus & { dropping: boolean };
}

/** Two nodes on one bus: `client` relays to `owner`, which hosts with fake streams that echo each request as an event. */
function twoNodes(bus: EventBus = createMemoryBus(), draining = false) {
  const streams: FakeStream[] = [];
  const applied: number[][] = [];
  const delivered: string[] = [];
  const host: RelayHost = {
    openStream: () => {
      const stream = new FakeStream();
      streams.push(stream);
      return stream as unknown as SessionStream;
    },
    apply: async (stream, request) => {
      applied.push([...request]);
      (stream as unknown as FakeStream).push(event(applied.length, request));
    },
    deliver: async (p, sessionId, request) => {
      delivered.push(`${p.tenantId}/${p.keyId} ${sessionId} ${[...request].join(",")}`);
      return 41;
    },
    encoder: (format) => (item) => (format === "flat" ? [item.bytes!] : [item.bytes!, item.bytes!]),
    track: () => {},
    draining: () => draining,
    log: { warn: () => {} },
  };
  const owner = createSessionRelay(createNodeChannel(bus, "owner.1"));
  owner.host(host);
  const client = createSessionRelay(createNodeChannel(bus, "client.1"));
  return { bus, owner, client, streams, applied, delivered };
}

async function collect(relay: Awaited<ReturnType<SessionRelay["open"]>>): Promise<{ got: number[][]; error?: RozError }> {
  const got: number[][] = [];
  try {
    for await (const b of relay.responses((data) => [...data])) got.push(b);
    return { got };
  } catch (err) {
    return { got, error: err as RozError };
  }
}

const relays: SessionRelay[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const r of relays.splice(0)) r.close();
});

describe("session relay over the node channel", () => {
  it("relays a stream: resume on the owner, requests in order, responses with their seq, half-close", async () => {
    const { owner, client, streams, applied } = twoNodes();
    relays.push(owner, client);
    const relay = await client.open("owner.1", principal, "s1", 7, "flat");
    expect(streams[0]!.calls).toEqual(["resume s1 7"]);
    expect([client.relayedStreams, owner.hostedStreams]).toEqual([1, 1]);
    const reading = collect(relay);
    expect(await relay.forward(bytes(10, 1))).toBe(true);
    expect(await relay.forward(bytes(10, 2))).toBe(true);
    expect(await relay.requestsEnded()).toBe(true);
    const { got, error } = await reading;
    expect(error).toBeUndefined();
    expect(applied).toEqual([
      [10, 1],
      [10, 2],
    ]);
    expect(got).toEqual(applied);
    expect(relay.lastSeq).toBe(7); // the echoed events' seqs (1, 2) are below where it resumed
    expect(streams[0]!.calls).toEqual(["resume s1 7", "requestsEnded", "transportBroken"]);
    expect([client.relayedStreams, owner.hostedStreams]).toEqual([0, 0]);
  });

  it("encodes per the stream's format and moves lastSeq with the events", async () => {
    const { owner, client, streams } = twoNodes();
    relays.push(owner, client);
    const relay = await client.open("owner.1", principal, "s1", 0, "envelope");
    const reading = collect(relay);
    streams[0]!.push(event(5, bytes(1)));
    streams[0]!.push(event(0, bytes(2)));
    streams[0]!.end();
    expect((await reading).got).toEqual([[1], [1], [2], [2]]);
    expect(relay.lastSeq).toBe(5);
  });

  it("ends the responses with the owner's fatal error, and fails the owner's stream when asked", async () => {
    const { owner, client, streams } = twoNodes();
    relays.push(owner, client);
    const relay = await client.open("owner.1", principal, "s1", 0, "flat");
    const reading = collect(relay);
    expect(await relay.fail(new RozError("unauthenticated", "key revoked"))).toBe(true);
    const { error } = await reading;
    expect(streams[0]!.calls).toContain("fail unauthenticated");
    expect(error).toBeInstanceOf(RozError);
    expect([error?.reason, error?.message]).toEqual(["unauthenticated", "key revoked"]);
  });

  it("delivers a request to the owner's session and answers its last seq", async () => {
    const { owner, client, delivered } = twoNodes();
    relays.push(owner, client);
    expect(await client.deliver("owner.1", principal, "s9", bytes(3, 4))).toBe(41);
    expect(delivered).toEqual(["t1/k1 s9 3,4"]);
  });

  it("refuses to open on a draining owner, and on a node that does not answer, with unavailable", async () => {
    const { owner, client, streams } = twoNodes(createMemoryBus(), true);
    relays.push(owner, client);
    await expect(client.open("owner.1", principal, "s1", 0, "flat")).rejects.toMatchObject({ reason: "unavailable", message: /not answering/ });
    await expect(client.open("nobody", principal, "s1", 0, "flat")).rejects.toMatchObject({ reason: "unavailable" });
    expect([streams.length, client.relayedStreams]).toEqual([0, 0]);
  });

  it("a keep round that finds the owner gone ends its relays with unavailable", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const { owner, client } = twoNodes();
    relays.push(client);
    const relay = await client.open("owner.1", principal, "s1", 3, "flat");
    const reading = collect(relay);
    owner.close();
    vi.advanceTimersByTime(2_000);
    const { error } = await reading;
    expect(error?.reason).toBe("unavailable");
    expect(error?.message).toMatch(/stopped answering/);
    expect(relay.lastSeq).toBe(3);
    expect(client.relayedStreams).toBe(0);
  });

  it("a keep round that counts more responses than arrived ends the relay, and the owner lets its stream go", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const bus = lossyBus(createMemoryBus());
    const { owner, client, streams } = twoNodes(bus);
    relays.push(owner, client);
    const relay = await client.open("owner.1", principal, "s1", 0, "flat");
    const reading = collect(relay);
    bus.dropping = true;
    streams[0]!.push(event(1, bytes(1)));
    await new Promise((resolve) => setTimeout(resolve, 10));
    bus.dropping = false;
    vi.advanceTimersByTime(2_000);
    const { got, error } = await reading;
    expect(got).toEqual([]);
    expect(error?.message).toMatch(/lost responses/);
    await vi.waitFor(() => expect(streams[0]!.calls).toContain("transportBroken"));
  });

  it("shutdown ends this node's relays with shutting_down", async () => {
    const { owner, client } = twoNodes();
    relays.push(owner, client);
    const relay = await client.open("owner.1", principal, "s1", 0, "flat");
    const reading = collect(relay);
    client.shutdown();
    expect(client.shuttingDown).toBe(true);
    expect((await reading).error?.reason).toBe("shutting_down");
  });
});

describe("session routing over the node channel", () => {
  it("ends a session on its owner node, and does nothing for this node", async () => {
    const bus = createMemoryBus();
    const ended: string[] = [];
    const live = { id: "s1" };
    const registry = {
      get: (tenantId: string, sessionId: string) => (tenantId === "t1" && sessionId === "s1" ? live : undefined),
      end: async (session: typeof live, status: string, reason: string) => {
        ended.push(`${session.id} ${status} ${reason}`);
      },
    };
    const ownerChannel = createNodeChannel(bus, "owner.1");
    const owner = createSessionRouting(ownerChannel, registry as never);
    const relay = createSessionRelay(ownerChannel);
    relay.host({} as RelayHost);
    const client = createSessionRouting(createNodeChannel(bus, "client.1"), registry as never);
    await client.endOnOwner("t1", "s1", "owner.1", "deleted");
    await client.endOnOwner("t1", "s1", "client.1", "not sent");
    expect(ended).toEqual(["s1 cancelled deleted"]);
    // Closed while the relay still answers: end requests are refused, the node stays reachable.
    owner.close();
    await expect(client.endOnOwner("t1", "s1", "owner.1", "again")).rejects.toMatchObject({ reason: "unavailable", details: undefined });
    relay.close();
    await expect(client.endOnOwner("t1", "s1", "owner.1", "again")).rejects.toMatchObject({ details: { noResponders: true } });
    client.close();
  });
});
