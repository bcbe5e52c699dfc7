// ROZ_LOG_FORMAT=pretty: pino's JSON lines as lines for people.
import { expect, it } from "vitest";
import { loadConfig } from "../../src/app/config.ts";
import { readableLine } from "../../src/app/log-format.ts";
import { loggerOptions } from "../../src/app/logger.ts";

const at = new Date(2026, 0, 2, 9, 5, 7, 42).getTime();

it("writes time, level, message and fields; a request as method, path, status and time; an error with its stack", () => {
  const request = {
    level: 20,
    time: at,
    pid: 1,
    hostname: "h",
    reqId: "r1",
    req: { method: "GET", url: "/v1/sessions" },
    res: { statusCode: 200 },
    responseTime: 3.0625,
    msg: "request completed",
  };
  expect(readableLine(JSON.stringify(request))).toBe("09:05:07.042 DEBUG request completed GET /v1/sessions 200 3.1 ms reqId=r1\n");
  const started = { level: 30, time: at, msg: "session started", sessionId: "s1", model: "scripted/default", usage: { input: 1 } };
  expect(readableLine(JSON.stringify(started))).toBe('09:05:07.042 INFO  session started sessionId=s1 model=scripted/default usage={"input":1}\n');
  const failed = { level: 50, time: at, msg: "could not persist", err: { message: "disk full", stack: "Error: disk full\n    at write" }, note: "two words" };
  expect(readableLine(JSON.stringify(failed))).toBe(
    '09:05:07.042 ERROR could not persist err="disk full" note="two words"\n    Error: disk full\n        at write\n',
  );
  expect(readableLine(JSON.stringify(started), true)).toContain("\u001b[32mINFO \u001b[0m");
  expect(readableLine("not json")).toBe("not json\n");
});

it("is chosen by ROZ_LOG_FORMAT (json by default; anything else is refused naming the variable)", () => {
  expect(loadConfig({}).logFormat).toBe("json");
  expect(loggerOptions(loadConfig({}))).not.toHaveProperty("stream");
  expect(loggerOptions(loadConfig({ ROZ_LOG_FORMAT: "pretty" }))).toHaveProperty("stream");
  expect(() => loadConfig({ ROZ_LOG_FORMAT: "xml" })).toThrow("ROZ_LOG_FORMAT");
});
