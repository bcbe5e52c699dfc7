import * as http2 from "node:http2";

export interface H2Response {
  headers: http2.IncomingHttpHeaders;
  /** Empty when the server answered trailers-only (status in the headers). */
  trailers: http2.IncomingHttpHeaders;
  data: Buffer;
  /** RST_STREAM code when the server reset the stream instead of ending it. */
  rstCode: number;
}

/** A gRPC length-prefixed message: flags byte, 4-byte big-endian length, payload. */
export function grpcFrame(payload: Buffer, options: { declaredLength?: number; compressed?: boolean } = {}): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt8(options.compressed ? 1 : 0, 0);
  header.writeUInt32BE(options.declaredLength ?? payload.length, 1);
  return Buffer.concat([header, payload]);
}

/** gRPC status of a response: from the trailers, or from the headers of a trailers-only answer. */
export function grpcStatusOf(response: H2Response): number | undefined {
  const raw = response.trailers["grpc-status"] ?? response.headers["grpc-status"];
  return raw === undefined ? undefined : Number(raw);
}

/**
 * One request with Node's own HTTP/2 client (h2c prior knowledge, or TLS for https URLs):
 * sends `headers` and `body`, then half-closes, and collects the whole answer. Lets a test
 * send bytes no well-behaved client would.
 */
export function h2Request(url: string, headers: http2.OutgoingHttpHeaders, body: Buffer | undefined, timeoutMs = 10_000): Promise<H2Response> {
  const session = http2.connect(url);
  return new Promise<H2Response>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no complete answer within ${timeoutMs} ms`)), timeoutMs);
    session.on("error", reject);
    const stream = session.request({ ":method": "POST", ...headers });
    let responseHeaders: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => (responseHeaders = h));
    stream.on("trailers", (t) => (trailers = t));
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("error", () => {}); // a reset is reported through rstCode
    stream.on("close", () => {
      clearTimeout(timer);
      resolve({ headers: responseHeaders, trailers, data: Buffer.concat(chunks), rstCode: stream.rstCode ?? 0 });
    });
    stream.end(body);
  }).finally(() => session.close());
}

/** Splits a gRPC response body into message payloads (throws on a malformed body). */
export function parseGrpcFrames(data: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let at = 0;
  while (at < data.length) {
    if (at + 5 > data.length) throw new Error(`incomplete frame header at ${at}`);
    const length = data.readUInt32BE(at + 1);
    if (at + 5 + length > data.length) throw new Error(`incomplete frame at ${at}`);
    out.push(data.subarray(at + 5, at + 5 + length));
    at += 5 + length;
  }
  return out;
}

/** Request headers of a gRPC call to `path`. */
export const grpcHeaders = (path: string, contentType = "application/grpc"): http2.OutgoingHttpHeaders => ({
  ":method": "POST",
  ":path": path,
  "content-type": contentType,
  te: "trailers",
});
