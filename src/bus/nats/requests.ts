import { headers as natsHeaders, type NatsConnection, RequestError, type Subscription as NatsCoreSubscription } from "@nats-io/transport-node";
import { isReason, RozError } from "../../errors/index.ts";
import type { RequestHandler, Responder } from "../types.ts";
import { fromHeaders, toHeaders } from "./wire.ts";

const DEFAULT_REQUEST_TIMEOUT_MS = 5_000;
/** Headers a failing request handler's reply carries instead of a body. */
const ERROR_REASON = "Roz-Error-Reason";
const ERROR_MESSAGE = "Roz-Error-Message";

/** Request/reply on core NATS (`<prefix>.rq.…`): a handler's RozError travels back in headers. */
export class Requests {
  readonly #nc: NatsConnection;
  readonly #prefix: string;
  readonly #responders = new Map<string, NatsCoreSubscription>();

  constructor(nc: NatsConnection, prefix: string) {
    this.#nc = nc;
    this.#prefix = `${prefix}.rq.`;
  }

  async request(subject: string, data: Uint8Array, options: { timeoutMs?: number; headers?: Record<string, string> } = {}): Promise<Uint8Array> {
    const timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const h = toHeaders(options.headers);
    let reply;
    try {
      reply = await this.#nc.request(this.#prefix + subject, data, { timeout: timeoutMs, ...(h ? { headers: h } : {}) });
    } catch (err) {
      throw new RozError("unavailable", `no reply on "${subject}": ${err instanceof Error ? err.message : String(err)}`, {
        cause: err,
        ...(err instanceof RequestError && err.isNoResponders() ? { details: { noResponders: true } } : {}),
      });
    }
    const reason = reply.headers?.get(ERROR_REASON);
    if (reason) throw new RozError(isReason(reason) ? reason : "internal", reply.headers?.get(ERROR_MESSAGE) || undefined);
    return reply.data;
  }

  serve(subject: string, handler: RequestHandler): Responder {
    if (this.#responders.has(subject)) throw new RozError("conflict", `"${subject}" is already served`);
    const sub = this.#nc.subscribe(this.#prefix + subject, {
      callback: (err, msg) => {
        if (err) return;
        void handler(msg.data, fromHeaders(msg.headers)).then(
          (answer) => msg.respond(answer),
          (error: unknown) => {
            const h = natsHeaders();
            h.set(ERROR_REASON, error instanceof RozError ? error.reason : "internal");
            h.set(ERROR_MESSAGE, error instanceof Error ? error.message : String(error));
            msg.respond(new Uint8Array(0), { headers: h });
          },
        );
      },
    });
    this.#responders.set(subject, sub);
    return {
      // The server has the subscription once a flush (PING/PONG) after it comes back.
      ready: this.#nc.flush().catch(() => undefined),
      close: () => {
        if (this.#responders.get(subject) !== sub) return;
        this.#responders.delete(subject);
        sub.unsubscribe();
      },
    };
  }

  /** Stops serving every subject. */
  close(): void {
    for (const sub of this.#responders.values()) sub.unsubscribe();
    this.#responders.clear();
  }
}
