import { APIError } from "openai";
import { describe, expect, it } from "vitest";
import { sseJson } from "../../src/models/sse.ts";

/** A Response whose body arrives in exactly these pieces. */
function responseOf(pieces: string[]): Response {
  const bytes = pieces.map((p) => new TextEncoder().encode(p));
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const b of bytes) controller.enqueue(b);
      controller.close();
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream" } });
}

async function collect(pieces: string[]): Promise<unknown[]> {
  const controller = new AbortController();
  const out: unknown[] = [];
  for await (const item of sseJson(responseOf(pieces), controller, controller.signal)) out.push(item);
  return out;
}

/** Every way of cutting `text` in two. */
const cuts = (text: string): string[][] => Array.from({ length: text.length - 1 }, (_, i) => [text.slice(0, i + 1), text.slice(i + 1)]);

describe("sseJson", () => {
  const stream = 'data: {"a":1}\n\n: a comment\n\nevent: message\ndata: {"b":\ndata: 2}\n\ndata: [DONE]\n\n';

  it("yields each data payload as JSON, joins multi-line data, skips comments, ends at [DONE]", async () => {
    expect(await collect([stream])).toEqual([{ a: 1 }, { b: 2 }]);
  });

  it("gives the same result however the bytes are cut, CRLF line ends included", async () => {
    const crlf = stream.replaceAll("\n", "\r\n");
    for (const text of [stream, crlf]) {
      for (const pieces of cuts(text)) expect(await collect(pieces), JSON.stringify(pieces)).toEqual([{ a: 1 }, { b: 2 }]);
    }
  });

  it("decodes multi-byte characters split across chunks", async () => {
    const bytes = new TextEncoder().encode('data: {"t":"héllo ✓"}\n\n');
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (const b of bytes) c.enqueue(Uint8Array.of(b));
        c.close();
      },
    });
    const controller = new AbortController();
    const out = [];
    for await (const item of sseJson(new Response(body), controller, controller.signal)) out.push(item);
    expect(out).toEqual([{ t: "héllo ✓" }]);
  });

  it("ends at [DONE] even when the server keeps the response open", async () => {
    const controller = new AbortController();
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('data: {"a":1}\n\ndata: [DONE]\n\n'));
      },
    });
    const out = [];
    for await (const item of sseJson(new Response(body), controller, controller.signal)) out.push(item);
    expect(out).toEqual([{ a: 1 }]);
    expect(controller.signal.aborted).toBe(false);
  });

  it("throws APIError for an error payload and for event: error, like the SDK", async () => {
    await expect(collect(['data: {"error":{"message":"overloaded","code":"server_error"}}\n\n'])).rejects.toBeInstanceOf(APIError);
    await expect(collect(['event: error\ndata: {"message":"boom"}\n\n'])).rejects.toBeInstanceOf(APIError);
  });

  it("throws a SyntaxError for malformed JSON", async () => {
    await expect(collect(["data: {oops\n\n"])).rejects.toBeInstanceOf(SyntaxError);
  });

  it("ends quietly when aborted, and leaving early aborts the request", async () => {
    const controller = new AbortController();
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new TextEncoder().encode('data: {"a":1}\n\n'));
      },
    });
    const out = [];
    for await (const item of sseJson(new Response(body), controller, controller.signal)) {
      out.push(item);
      break;
    }
    expect(out).toEqual([{ a: 1 }]);
    expect(controller.signal.aborted).toBe(true);
  });
});
