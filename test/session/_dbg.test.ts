import { afterAll, beforeAll, it } from "vitest";
import { nextOf, rq } from "../support/session-protocol.ts";
import { type SessionFixture, startSessionFixture } from "./fixture.ts";
let fx: SessionFixture;
beforeAll(async () => { fx = await startSessionFixture({ env: { ROZ_DETACH_GRACE_MS: "60000" } }); });
afterAll(() => fx?.close());
it("dbg", async () => {
  const { client, started } = await fx.start("grpc-js");
  fx.fake.plan({ text: "I keep talking while you are away.", frameDelayMs: 30 });
  client.send(rq.user("talk", { messageId: "while-away" }));
  await nextOf(client, "textDelta");
  console.log(JSON.stringify(await fx.rest("GET", `/v1/sessions/${started.sessionId}`)));
  client.cancel();
  for (let i = 0; i < 5; i++) { await new Promise((r) => setTimeout(r, 200)); console.log(fx.server.app.registry.get("default", started.sessionId)?.status, JSON.stringify(await fx.rest("GET", `/v1/sessions/${started.sessionId}`))); }
  await fx.rest("DELETE", `/v1/sessions/${started.sessionId}`);
}, 20000);
