/**
 * A real OTLP/HTTP trace receiver for the tests: it accepts `POST /v1/traces` in both
 * encodings an exporter may use, `http/protobuf` (decoded with protobufjs and the upstream
 * field numbers in otlp/trace.proto) and `http/json`, gzip or not, and keeps every span in
 * one shape whatever the encoding.
 */
import { once } from "node:events";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import protobuf from "protobufjs";

const requestType = protobuf.loadSync(fileURLToPath(new URL("./otlp/trace.proto", import.meta.url))).lookupType("otlp.ExportTraceServiceRequest");

/** SpanKind as OTLP numbers it. */
export const SPAN_KIND = { internal: 1, server: 2, client: 3 } as const;
/** Status.code as OTLP numbers it. */
export const STATUS = { unset: 0, ok: 1, error: 2 } as const;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  /** Attribute values as JSON values (int64 as numbers, arrays as arrays). */
  attributes: Record<string, unknown>;
  status: { code: number; message: string };
  resource: Record<string, unknown>;
  scope: string;
  /** How it came: the request's encoding. */
  protocol: "http/protobuf" | "http/json";
}

export interface OtlpReceiver {
  /** Base URL, for `OTEL_EXPORTER_OTLP_ENDPOINT` (spans go to `<url>/v1/traces`). */
  readonly url: string;
  /** Every export request: its path and content type. */
  readonly requests: { path: string; contentType: string }[];
  readonly spans: ReceivedSpan[];
  /** Resolves with the spans once `done(spans)` holds (rejects after `timeoutMs`). */
  waitFor(done: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

/** An OTLP AnyValue (JSON form, or protobufjs's object form with the same names) as a plain value. */
function plainValue(any: Json | undefined): unknown {
  if (any === undefined || any === null) return undefined;
  if ("stringValue" in any) return any.stringValue;
  if ("boolValue" in any) return any.boolValue;
  if ("intValue" in any) return Number(any.intValue);
  if ("doubleValue" in any) return Number(any.doubleValue);
  if ("arrayValue" in any) return (((any.arrayValue as Json).values as Json[] | undefined) ?? []).map(plainValue);
  if ("kvlistValue" in any) return attributesOf((any.kvlistValue as Json).values as Json[] | undefined);
  return undefined;
}

function attributesOf(list: Json[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key as string, plainValue(kv.value as Json | undefined)]));
}

/** Ids are hex in OTLP/JSON and bytes (here base64) in protobuf. */
const idOf = (value: unknown, protocol: ReceivedSpan["protocol"]): string =>
  typeof value !== "string" || value === "" ? "" : protocol === "http/json" ? value.toLowerCase() : Buffer.from(value, "base64").toString("hex");

function spansOf(request: Json, protocol: ReceivedSpan["protocol"]): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of (request.resourceSpans as Json[] | undefined) ?? []) {
    const resource = attributesOf(((rs.resource as Json | undefined)?.attributes as Json[] | undefined) ?? []);
    for (const ss of (rs.scopeSpans as Json[] | undefined) ?? []) {
      const scope = String((ss.scope as Json | undefined)?.name ?? "");
      for (const s of (ss.spans as Json[] | undefined) ?? []) {
        const status = (s.status as Json | undefined) ?? {};
        out.push({
          traceId: idOf(s.traceId, protocol),
          spanId: idOf(s.spanId, protocol),
          parentSpanId: idOf(s.parentSpanId, protocol),
          name: String(s.name),
          kind: Number(s.kind ?? 0),
          startNs: BigInt(String(s.startTimeUnixNano ?? 0)),
          endNs: BigInt(String(s.endTimeUnixNano ?? 0)),
          attributes: attributesOf(s.attributes as Json[] | undefined),
          status: { code: Number(status.code ?? 0), message: String(status.message ?? "") },
          resource,
          scope,
          protocol,
        });
      }
    }
  }
  return out;
}

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  return req.headers["content-encoding"] === "gzip" ? gunzipSync(body) : body;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const requests: OtlpReceiver["requests"] = [];
  const spans: ReceivedSpan[] = [];
  const waiters = new Set<() => void>();
  const server = createServer((req, res) => {
    void (async () => {
      const contentType = String(req.headers["content-type"] ?? "");
      requests.push({ path: req.url ?? "", contentType });
      const body = await bodyOf(req);
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      if (contentType.startsWith("application/x-protobuf")) {
        const decoded = requestType.toObject(requestType.decode(body), { longs: String, bytes: String });
        spans.push(...spansOf(decoded as Json, "http/protobuf"));
        res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
      } else if (contentType.startsWith("application/json")) {
        spans.push(...spansOf(JSON.parse(body.toString("utf8")) as Json, "http/json"));
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      } else {
        res.writeHead(415).end();
        return;
      }
      for (const wake of waiters) wake();
    })().catch(() => {
      res.writeHead(400).end();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    spans,
    waitFor(done, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (!done(spans)) return;
          finish();
          resolve(spans);
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`the receiver did not get the expected spans within ${timeoutMs} ms; it has: ${spans.map((s) => s.name).join(", ")}`));
        }, timeoutMs);
        const finish = (): void => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
