// ROZ_EVENT_FORMAT: the format of streams whose metadata chooses none; the header wins.
// Also `buf curl`, with the schema from reflection, reading envelopes off a real session.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig, settingsHelp } from "../../src/app/config.ts";
import { bufCurl, bufCurlMessages } from "../support/buf-curl.ts";
import { startServer, type TestServer } from "../support/server.ts";
import { type SessionClientFactory, sessionClientFactory } from "../support/session-client.ts";
import { rq, startSession } from "../support/session-protocol.ts";
import { createUpstreamClient, up, type UpstreamClient } from "../support/upstream-client.ts";

describe("ROZ_EVENT_FORMAT configuration", () => {
  it("defaults to flat, takes flat, envelope or both, and refuses anything else naming the variable", () => {
    expect(loadConfig({}).eventFormat).toBe("flat");
    expect(loadConfig({ ROZ_EVENT_FORMAT: "both" }).eventFormat).toBe("both");
    expect(() => loadConfig({ ROZ_EVENT_FORMAT: "json" })).toThrow('ROZ_EVENT_FORMAT: expected one of flat, envelope, both, got "json"');
    expect(settingsHelp()).toMatch(/ROZ_EVENT_FORMAT .*\(default: flat\)/);
  });
});

describe("a server whose default is envelope", () => {
  let server: TestServer;
  let upstream: UpstreamClient;
  let connect: SessionClientFactory;
  beforeAll(async () => {
    server = await startServer({ ROZ_EVENT_FORMAT: "envelope", ROZ_KEEPALIVE_INTERVAL_MS: "3600000" });
    upstream = createUpstreamClient(server.url);
    connect = sessionClientFactory("connect", server.url);
  });
  afterAll(async () => {
    upstream?.close();
    connect?.close();
    await server?.close();
  });

  it("sends envelopes to a stream that chooses nothing", async () => {
    const call = upstream.openSession(undefined);
    call.send(up.start());
    const first = await call.next(10_000);
    expect(first.session_event).toMatchObject({ event_type: "session_started" });
    call.cancel();
  });

  it("sends envelopes over the Connect protocol too (connect-node, our own generated client)", async () => {
    const client = connect.open();
    client.send(rq.start());
    const first = await client.next(10_000);
    expect(first.seq).toBe(1n);
    expect(first.response.case).toBe("sessionEvent");
    expect(first.response.value).toMatchObject({ eventType: "session_started", typedEvent: { case: "sessionStarted", value: { mode: "server" } } });
    client.cancel();
  });

  it("still serves a v0.2 client that asks for flat (connect-node over HTTP/2)", async () => {
    const client = connect.open({ "roz-event-format": "flat" });
    const started = await startSession(client);
    expect(started.model).toBe("scripted/default");
    client.cancel();
  });

  it("buf curl reads the envelopes with the schema it got from reflection", async () => {
    const responses = bufCurlMessages<{ seq: string; sessionEvent?: { eventType: string; [k: string]: unknown } }>(
      await bufCurl(["-d", '{"start":{}} {"userMessage":{"content":"hello","messageId":"b-1"}}', `${server.url}/roz.v1.AgentService/StreamSession`]),
    );
    const types = responses.map((r) => r.sessionEvent?.eventType);
    expect(types[0]).toBe("session_started");
    expect(types).toEqual(expect.arrayContaining(["turn_started", "text_delta", "model_call", "turn_finished"]));
    expect(types.at(-1)).toBe("session_completed");
    const finished = responses.find((r) => r.sessionEvent?.eventType === "turn_finished")!.sessionEvent!;
    expect(finished["turnFinished"]).toMatchObject({ stopReason: "end_turn", messageId: "b-1" });
  }, 40_000);
});
