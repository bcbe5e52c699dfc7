import type { IncomingHttpHeaders } from "node:http2";
import { toBinary } from "@bufbuild/protobuf";
import { type Compression, compressionNegotiate, createMethodUrl } from "@connectrpc/connect/protocol";
import { contentTypeProto, parseContentType } from "@connectrpc/connect/protocol-grpc";
import type { RozError } from "../errors/index.ts";
import type { Principal, StreamSlots } from "../session/index.ts";
import { AgentService, SessionResponseSchema } from "../gen/roz/v1/agent_pb.js";
import { toConnectError } from "./connect-errors.ts";
import { type EventFormat, eventFormatHeader, eventFormatOf } from "./event-format.ts";
import { envelopes, grpcStatusTrailers } from "./framing.ts";
import { createResponseEncoder, refusalResponses } from "./responses.ts";

/** A complete response, written as it is: no handler runs for it. */
export interface CannedResponse {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
  trailers: Record<string, string>;
}

/** The calls that take a stream slot (through `openSessionCall`). */
const SLOT_PATHS = new Set([createMethodUrl("/", AgentService.method.streamSession), createMethodUrl("/", AgentService.method.attachSession)]);

/** Credentials remembered at once, at most; beyond, the oldest half is forgotten. */
const MAX_REMEMBERED = 10_000;

export interface AtCapRefusalsOptions {
  slots: StreamSlots;
  /**
   * How long a full check of a credential is trusted (`ROZ_CREDENTIAL_RECHECK_MS`, as for an
   * open stream's key); 0 turns the shortcut off.
   */
  trustMs: number;
  /** How often this process saw a key revoked or rotated; a change ends the trust at once. */
  revocationsOf: (keyId: string) => number;
  defaultEventFormat: EventFormat;
  /** The server's response compressions (connect's `acceptCompression`), for the same `grpc-encoding` negotiation. */
  acceptCompression: Compression[];
  now?: () => number;
}

interface Remembered {
  principal: Principal;
  checkedAt: number;
  revocations: number;
  /** Built at the first early answer; the refusal does not change while the key stays at its cap. */
  refusal?: RefusalParts;
}

/**
 * Refuses the gRPC session streams of a key that is at its stream cap before they are routed.
 * A client that opens streams as fast as it is refused (one key, thousands of streams) makes
 * each of them cost the whole pipeline, Fastify's request and connect's handler (the garbage
 * behind most GC pauses in such a flood), only to get `resource_exhausted`.
 *
 * A credential is remembered when a stream of its key was refused for the cap through the full
 * path (`remember`). Its next streams get the same answer from `answer`, built from the same
 * pieces (the in-band `SessionError` in the call's event format, the status trailers), while
 * the key is still at its cap, it was not revoked or rotated through this process, and for at
 * most `trustMs` after the full check: after that the next stream takes the full path again,
 * which also sees a key revoked on another node or expired. Only binary gRPC calls are
 * answered here; anything else (gRPC-Web, Connect, JSON, a browser's `origin`, a deadline,
 * a header the full path would refuse) is routed as before.
 */
export class AtCapRefusals {
  readonly #options: AtCapRefusalsOptions;
  readonly #now: () => number;
  readonly #remembered = new Map<string, Remembered>();

  constructor(options: AtCapRefusalsOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** A stream with `authorization` was refused for its key's cap after a full check. */
  remember(authorization: string | null, principal: Principal): void {
    if (this.#options.trustMs <= 0) return;
    if (this.#remembered.size >= MAX_REMEMBERED) {
      let forget = MAX_REMEMBERED / 2;
      for (const credential of this.#remembered.keys()) {
        if (forget-- <= 0) break;
        this.#remembered.delete(credential);
      }
    }
    const keyId = principal.keyId;
    const credential = authorization ?? "";
    // Deleted first so that it is the newest entry, the last to be forgotten.
    this.#remembered.delete(credential);
    this.#remembered.set(credential, {
      principal,
      checkedAt: this.#now(),
      revocations: keyId === undefined ? 0 : this.#options.revocationsOf(keyId),
    });
  }

  /** The refusal of a request whose credential is remembered and still over its cap; undefined: route it. */
  answer(headers: IncomingHttpHeaders): CannedResponse | undefined {
    if (this.#remembered.size === 0) return undefined;
    const credential = headers.authorization ?? "";
    const remembered = this.#remembered.get(credential);
    if (remembered === undefined) return undefined;
    if (!this.#stillRefused(remembered)) {
      this.#remembered.delete(credential);
      return undefined;
    }
    const call = grpcCallOf(headers, this.#options);
    if (call === undefined) return undefined;
    remembered.refusal ??= refusalParts(this.#options.slots.refusal(remembered.principal) as RozError);
    const { refusal } = remembered;
    const headersOut: Record<string, string> = { "content-type": contentTypeProto };
    if (call.encoding !== undefined) headersOut["grpc-encoding"] = call.encoding;
    const body = call.format === "flat" ? refusal.flatBody : inBandError(call.format, refusal.error);
    return { status: 200, headers: headersOut, body, trailers: refusal.trailers };
  }

  #stillRefused({ principal, checkedAt, revocations }: Remembered): boolean {
    const keyId = principal.keyId;
    if (this.#now() - checkedAt >= this.#options.trustMs) return false;
    if ((keyId === undefined ? 0 : this.#options.revocationsOf(keyId)) !== revocations) return false;
    return this.#options.slots.full(principal);
  }
}

const single = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? undefined : value);

/**
 * The event format and negotiated response compression of a binary gRPC session call that
 * `openSessionCall` would refuse for the cap with nothing but `resource_exhausted`; undefined
 * for any other request.
 */
function grpcCallOf(
  headers: IncomingHttpHeaders,
  options: Pick<AtCapRefusalsOptions, "defaultEventFormat" | "acceptCompression">,
): { format: EventFormat; encoding: string | undefined } | undefined {
  if (headers[":method"] !== "POST" || !SLOT_PATHS.has(headers[":path"] ?? "") || headers.origin !== undefined) return undefined;
  const type = parseContentType(single(headers["content-type"]) ?? null);
  if (type === undefined || !type.binary) return undefined;
  // A deadline could end the call first: such calls take the full path.
  if (headers["grpc-timeout"] !== undefined) return undefined;
  const compression = compressionNegotiate(
    options.acceptCompression,
    single(headers["grpc-encoding"]) ?? null,
    single(headers["grpc-accept-encoding"]) ?? null,
    "grpc-accept-encoding",
  );
  if (compression.error) return undefined;
  const encoding = compression.response?.name;
  const asked = single(headers[eventFormatHeader]);
  if (asked === undefined) return { format: options.defaultEventFormat, encoding };
  try {
    return { format: eventFormatOf(new Headers({ [eventFormatHeader]: asked }), options.defaultEventFormat), encoding };
  } catch {
    return undefined;
  }
}

/** What connect's gRPC handler sends for a call `openSessionCall` refuses with `error`, but for the headers. */
interface RefusalParts {
  error: RozError;
  /** The status trailers, `grpc-message` encoded as the protocol says (as `encodeGrpcMessagesOf` makes connect's). */
  trailers: Record<string, string>;
  /** The in-band error in the flat format (the same bytes on every stream). */
  flatBody: Uint8Array;
}

function refusalParts(error: RozError): RefusalParts {
  return { error, trailers: grpcStatusTrailers(toConnectError(error)), flatBody: inBandError("flat", error) };
}

/** The in-band error (seq 0) in `format`, as enveloped gRPC messages, uncompressed (they are below the compression threshold). */
function inBandError(format: EventFormat, error: RozError): Uint8Array {
  const messages = refusalResponses(createResponseEncoder(format), error);
  return envelopes(messages.map((message) => toBinary(SessionResponseSchema, message)));
}
