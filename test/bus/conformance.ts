/**
 * The one behavioural suite every `EventBus` implementation must pass. An implementation's
 * test file calls `defineBusConformance(name, open)` with a function that opens a fresh bus.
 */
import { afterEach, describe, expect, it } from "vitest";
import { RozError } from "../../src/errors/index.ts";
import { type BusMessage, type EventBus, isNoResponders, type Subscription } from "../../src/bus/index.ts";

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array): string => new TextDecoder().decode(b);

/** Reads `n` messages from a subscription (rejects after `timeoutMs`). */
async function take(sub: Subscription, n: number, timeoutMs = 5_000): Promise<BusMessage[]> {
  const out: BusMessage[] = [];
  if (n === 0) return out;
  const iterator = sub[Symbol.asyncIterator]();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`only ${out.length} of ${n} messages within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    while (out.length < n) {
      const r = await Promise.race([iterator.next(), timeout]);
      if (r.done) break;
      out.push(r.value);
    }
  } finally {
    clearTimeout(timer);
  }
  return out;
}

export function defineBusConformance(name: string, open: () => Promise<EventBus>): void {
  describe(`EventBus conformance: ${name}`, () => {
    const opened: EventBus[] = [];
    const bus = async (): Promise<EventBus> => {
      const b = await open();
      opened.push(b);
      return b;
    };
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((b) => b.close()));
    });

    it("publish returns increasing stream sequences shared by all subjects", async () => {
      const b = await bus();
      const a1 = await b.publish("conf.a", bytes("1"));
      const b1 = await b.publish("conf.b", bytes("2"));
      const a2 = await b.publish("conf.a", bytes("3"));
      expect(a1).toBeGreaterThan(0);
      expect(b1).toBeGreaterThan(a1);
      expect(a2).toBeGreaterThan(b1);
    });

    it("a subscription from a sequence replays, then continues live, in order, filtered by subject", async () => {
      const b = await bus();
      const first = await b.publish("conf.t1", bytes("one"), { "Roz-Seq": "1" });
      await b.publish("conf.t2", bytes("other"));
      await b.publish("conf.t1", bytes("two"));
      const sub = b.subscribe("conf.t1", { from: { afterSeq: first - 1 } });
      await b.publish("conf.t1", bytes("three"));
      const got = await take(sub, 3);
      sub.close();
      expect(got.map((m) => text(m.data))).toEqual(["one", "two", "three"]);
      expect(got.every((m) => m.subject === "conf.t1")).toBe(true);
      expect(got[0]!.headers["Roz-Seq"]).toBe("1");
      expect(got[0]!.seq).toBe(first);
      expect(got[1]!.seq).toBeLessThan(got[2]!.seq);
    });

    it("a subscription after a sequence skips what came before", async () => {
      const b = await bus();
      await b.publish("conf.s", bytes("old"));
      const mid = await b.publish("conf.s", bytes("mid"));
      await b.publish("conf.s", bytes("new"));
      const sub = b.subscribe("conf.s", { from: { afterSeq: mid } });
      expect((await take(sub, 1)).map((m) => text(m.data))).toEqual(["new"]);
      sub.close();
    });

    it("new-only subscriptions see only later messages; several subscribers each get everything", async () => {
      const b = await bus();
      await b.publish("conf.n", bytes("before"));
      const s1 = b.subscribe("conf.n", { from: "new" });
      const s2 = b.subscribe("conf.n", { from: "new" });
      await Promise.all([s1.ready, s2.ready]);
      for (let i = 0; i < 50; i++) await b.publish("conf.n", bytes(String(i)));
      const expected = Array.from({ length: 50 }, (_, i) => String(i));
      expect((await take(s1, 50)).map((m) => text(m.data))).toEqual(expected);
      expect((await take(s2, 50)).map((m) => text(m.data))).toEqual(expected);
      s1.close();
      s2.close();
    });

    it("wildcard filters: * is one token, > the rest", async () => {
      const b = await bus();
      const star = b.subscribe("conf.w.*", { from: "new" });
      const rest = b.subscribe("conf.w.>", { from: "new" });
      await Promise.all([star.ready, rest.ready]);
      await b.publish("conf.w.a", bytes("a"));
      await b.publish("conf.w.a.b", bytes("ab"));
      await b.publish("conf.x.a", bytes("x"));
      await b.publish("conf.w.c", bytes("c"));
      expect((await take(star, 2)).map((m) => text(m.data))).toEqual(["a", "c"]);
      expect((await take(rest, 3)).map((m) => text(m.data))).toEqual(["a", "ab", "c"]);
      star.close();
      rest.close();
    });

    it("close ends the iteration", async () => {
      const b = await bus();
      const sub = b.subscribe("conf.c", { from: "new" });
      await sub.ready;
      const reading = (async () => {
        const seen: string[] = [];
        for await (const m of sub) seen.push(text(m.data));
        return seen;
      })();
      await b.publish("conf.c", bytes("x"));
      await take(b.subscribe("conf.c", { from: { afterSeq: 0 } }), 1);
      sub.close();
      expect(await reading).toEqual(["x"]);
    });

    it("a subscription closed before its start is fixed is still ready (and ends)", async () => {
      const b = await bus();
      const sub = b.subscribe("conf.early", { from: "new" });
      sub.close();
      await sub.ready;
      const seen: BusMessage[] = [];
      for await (const m of sub) seen.push(m);
      expect(seen).toEqual([]);
    });

    it("an invalid subject is refused", async () => {
      const b = await bus();
      await expect(b.publish("conf..x", bytes(""))).rejects.toBeInstanceOf(RozError);
      await expect(b.publish("conf.*", bytes(""))).rejects.toBeInstanceOf(RozError);
    });

    it("request/reply reaches the one responder; without one it is unavailable", async () => {
      const b = await bus();
      const responder = b.serve("conf.owner.n1", async (data, headers) => bytes(`${text(data)}:${headers["x"] ?? ""}`));
      expect(text(await b.request("conf.owner.n1", bytes("ping"), { headers: { x: "h" } }))).toBe("ping:h");
      responder.close();
      const err = await b.request("conf.owner.n1", bytes("ping"), { timeoutMs: 500 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RozError);
      expect((err as RozError).reason).toBe("unavailable");
    });

    it("says when nobody serves a subject, which a slow responder's timeout is not", async () => {
      const b = await bus();
      const nobody = await b.request("conf.nobody", bytes(""), { timeoutMs: 2000 }).catch((e: unknown) => e);
      expect(nobody).toMatchObject({ reason: "unavailable" });
      expect(isNoResponders(nobody)).toBe(true);
      const slow = b.serve("conf.slow", () => new Promise<Uint8Array>((resolve) => setTimeout(() => resolve(bytes("late")), 1000)));
      await slow.ready;
      const late = await b.request("conf.slow", bytes(""), { timeoutMs: 200 }).catch((e: unknown) => e);
      expect(late).toMatchObject({ reason: "unavailable" });
      expect(isNoResponders(late)).toBe(false);
      slow.close();
    });

    it("a direct line delivers in the sender's order to its listeners, stores nothing, and stops at close", async () => {
      const b = await bus();
      const listener = b.listen("conf.line.one");
      const other = b.listen("conf.line.two");
      await listener.ready;
      await other.ready;
      for (let i = 1; i <= 50; i++) b.send("conf.line.one", bytes(`m${i}`), { n: String(i) });
      b.send("conf.line.two", bytes("elsewhere"));
      const got = await take(listener, 50);
      expect(got.map((m) => text(m.data))).toEqual(Array.from({ length: 50 }, (_, i) => `m${i + 1}`));
      expect(got.map((m) => m.headers["n"])).toEqual(Array.from({ length: 50 }, (_, i) => String(i + 1)));
      expect(got.every((m) => m.subject === "conf.line.one" && m.seq === 0)).toBe(true);
      expect(listener.received).toBe(50);
      expect((await take(other, 1)).map((m) => text(m.data))).toEqual(["elsewhere"]);
      expect(other.received).toBe(1);
      // Nothing of it went to the stream.
      const stored = b.subscribe("conf.line.>", { from: { afterSeq: 0 } });
      await b.publish("conf.mark", bytes("mark"));
      const marker = b.subscribe("conf.mark", { from: { afterSeq: 0 } });
      expect((await take(marker, 1)).map((m) => text(m.data))).toEqual(["mark"]);
      expect(stored.dropped).toBe(0);
      stored.close();
      marker.close();
      listener.close();
      const ended = await take(listener, 1, 1_000);
      expect(ended).toEqual([]);
      expect(() => b.send("conf.line.one", bytes("after close"))).not.toThrow();
      expect(() => b.listen("conf.*")).toThrow(RozError);
    });

    it("a handler's error reaches the requester", async () => {
      const b = await bus();
      const responder = b.serve("conf.fail", async () => {
        throw new RozError("not_found", "no such thing");
      });
      const err = await b.request("conf.fail", bytes("")).catch((e: unknown) => e);
      expect((err as RozError).reason).toBe("not_found");
      responder.close();
    });
  });
}
