import { AsyncLocalStorage } from "node:async_hooks";
import { type Context, createContextKey, ROOT_CONTEXT, type Span, trace } from "@opentelemetry/api";

/** The session a span belongs to, inherited by the spans under a turn's (`gen_ai.conversation.id`). */
const CONVERSATION = createContextKey("roz.conversation_id");

/**
 * The active span of this app, carried through async calls by its own AsyncLocalStorage (no
 * global context manager is registered: two apps in one process keep their spans apart).
 */
export class Scope {
  readonly #storage = new AsyncLocalStorage<Context>();
  /** Spans whose requests' loggers already carry their ids (REST): log lines get them once. */
  readonly #bound = new WeakSet<Span>();

  active(): Context {
    return this.#storage.getStore() ?? ROOT_CONTEXT;
  }

  /** Runs `fn`, and everything it starts, in `context`. */
  run<T>(context: Context, fn: () => T): T {
    return this.#storage.run(context, fn);
  }

  /** `parent` with `span` active (and, when given, the session it belongs to). */
  child(parent: Context, span: Span, conversationId?: string): Context {
    const context = trace.setSpan(parent, span);
    return conversationId === undefined ? context : context.setValue(CONVERSATION, conversationId);
  }

  /** The session of the active span, if it is under a turn. */
  conversationOf(context: Context): string | undefined {
    const id = context.getValue(CONVERSATION);
    return typeof id === "string" ? id : undefined;
  }

  /** Marks a span whose log lines carry its ids through a child logger. */
  bind(span: Span): void {
    this.#bound.add(span);
  }

  logIds(): Record<string, string> {
    const span = trace.getSpan(this.active());
    if (span === undefined || this.#bound.has(span)) return {};
    const { traceId, spanId } = span.spanContext();
    return { trace_id: traceId, span_id: spanId };
  }
}
