/**
 * Request/reply over the IPC channel of a forked benchmark child: the parent `ask`s, the
 * child `serve`s named commands. Used by the load generator's children (load-child.ts),
 * so that the fake provider and the clients do not share an event loop with the driver
 * or with each other.
 */
import { type ChildProcess, fork } from "node:child_process";
import { within } from "./support.ts";

type Request = { id: number; type: string; [key: string]: unknown };
type Reply = { id: number; ok: true; value: unknown } | { id: number; ok: false; error: string } | { ready: unknown } | { failed: string };

export interface IpcChild {
  readonly pid: number;
  /** What the child's `serve` announced once it was ready. */
  readonly ready: unknown;
  ask<T>(type: string, payload?: Record<string, unknown>, timeoutMs?: number): Promise<T>;
  /** Asks `close` (if the child serves it), then makes sure the child is gone. */
  close(): Promise<void>;
}

/** Forks `entry` with `env` and resolves once it announced itself ready. */
export async function forkChild(entry: string, env: Record<string, string>): Promise<IpcChild> {
  const child: ChildProcess = fork(entry, [], { env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  const ready = await within(
    new Promise<unknown>((resolve, reject) => {
      child.on("message", (reply: Reply) => {
        if ("ready" in reply) resolve(reply.ready);
        else if ("failed" in reply) reject(new Error(`bench child failed to start:\n${reply.failed}`));
        else {
          const w = waiting.get(reply.id);
          waiting.delete(reply.id);
          if (reply.ok) w?.resolve(reply.value);
          else w?.reject(new Error(reply.error));
        }
      });
      void exited.then(() => {
        reject(new Error(`bench child exited (code ${child.exitCode})`));
        for (const w of waiting.values()) w.reject(new Error("bench child exited"));
      });
    }),
    30_000,
    "bench child start",
  ).catch(async (err: unknown) => {
    child.kill("SIGKILL");
    await exited;
    throw err;
  });
  const ask = <T>(type: string, payload: Record<string, unknown> = {}, timeoutMs = 120_000): Promise<T> => {
    const id = nextId++;
    const answer = new Promise<unknown>((resolve, reject) => waiting.set(id, { resolve, reject }));
    child.send({ ...payload, id, type } satisfies Request);
    return within(answer as Promise<T>, timeoutMs, `bench child ${type}`);
  };
  return {
    pid: child.pid as number,
    ready,
    ask,
    async close() {
      try {
        await ask("close", {}, 10_000);
        await within(exited, 5000, "bench child exit");
      } catch {
        // A child that hangs at close must not hang the benchmark.
      }
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}

/** The child side: announces `ready`, then answers each command with its handler's result. */
export function serve(ready: unknown, handlers: Record<string, (request: Record<string, unknown>) => Promise<unknown>>): void {
  process.on("message", (request: Request) => {
    const handler = handlers[request.type];
    const answer = handler ? handler(request) : Promise.reject(new Error(`unknown command ${request.type}`));
    answer.then(
      (value) => {
        // Exit only once the reply is out: the parent waits for it.
        process.send?.({ id: request.id, ok: true, value } satisfies Reply, () => {
          if (request.type === "close") process.exit(0);
        });
      },
      (err: unknown) => process.send?.({ id: request.id, ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) } satisfies Reply),
    );
  });
  process.on("disconnect", () => process.exit(0));
  process.send?.({ ready } satisfies Reply);
}

/** Reports a failed start to the parent and exits. */
export function failStart(err: unknown): never {
  process.send?.({ failed: err instanceof Error ? (err.stack ?? err.message) : String(err) } satisfies Reply);
  process.exit(1);
}
