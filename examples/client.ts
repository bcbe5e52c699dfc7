import { readFile } from "node:fs/promises";
import { RozClient } from "@roz/client";
const roz = new RozClient({ baseUrl: process.env.ROZ_URL ?? "http://127.0.0.1:8080", apiKey: process.env.ROZ_KEY });
const schema = { type: "object", properties: { path: { type: "string" } }, required: ["path"] };
const session = await roz.startSession({
  tools: { read_file: { description: "Read a file", parameters: schema, run: ({ path }) => readFile(path, "utf8") } },
  onApproval: (approval) => approval.toolName !== "rm", // or { approved, modifier }
});
const turn = session.send(process.argv[2] ?? "hello"); // while a turn runs: { delivery: "queue" | "steer" | "interrupt" }
for await (const ev of turn) if (ev.type === "text_delta") process.stdout.write(ev.content);
const { stopReason, usage, costUsd } = await turn.done;
console.log(`\n${stopReason}: ${usage.inputTokens} in, ${usage.outputTokens} out, $${costUsd}`);
await session.close();
roz.close();
