// The app's shutdown steps run in the one written order, whatever order modules registered
// them in; a failing step is logged and the others still run.
import { describe, expect, it } from "vitest";
import { Lifecycle, SHUTDOWN_ORDER } from "../../src/app/lifecycle.ts";

const quietLog = (warnings: unknown[] = []) => ({ warn: (...args: unknown[]) => void warnings.push(args) });

describe("Lifecycle", () => {
  it("runs the registered steps in SHUTDOWN_ORDER, once, and reads closing from the first call", async () => {
    const lifecycle = new Lifecycle();
    const ran: string[] = [];
    for (const step of ["store", "listener", "teams", "running turns"] as const) lifecycle.onClose(step, () => void ran.push(step));
    expect(lifecycle.closing).toBe(false);
    const closed = lifecycle.close(quietLog());
    expect(lifecycle.closing).toBe(true);
    expect(lifecycle.close(quietLog())).toBe(closed);
    await closed;
    expect(ran).toEqual(SHUTDOWN_ORDER.filter((step) => ran.includes(step)));
    expect(ran).toEqual(["listener", "running turns", "teams", "store"]);
  });

  it("logs a failing step and still runs the ones after it", async () => {
    const lifecycle = new Lifecycle();
    const ran: string[] = [];
    lifecycle.onClose("teams", () => Promise.reject(new Error("teams would not stop")));
    lifecycle.onClose("bus", () => void ran.push("bus"));
    lifecycle.onClose("store", () => void ran.push("store"));
    const warnings: unknown[] = [];
    await lifecycle.close(quietLog(warnings));
    expect(ran).toEqual(["bus", "store"]);
    expect(warnings).toEqual([[{ err: new Error("teams would not stop"), step: "teams" }, "shutdown step failed"]]);
  });

  it("closes what it opened, never what the caller gave it", async () => {
    const lifecycle = new Lifecycle();
    const closed: string[] = [];
    const resource = (name: string) => ({ name, close: () => void closed.push(name) });
    const given = await lifecycle.own("bus", resource("given bus"), async () => resource("opened bus"));
    const opened = await lifecycle.own("store", undefined, async () => resource("opened store"));
    expect([given.name, opened.name]).toEqual(["given bus", "opened store"]);
    await lifecycle.close(quietLog());
    expect(closed).toEqual(["opened store"]);
  });

  it("refuses a step registered twice", () => {
    const lifecycle = new Lifecycle();
    lifecycle.onClose("store", () => undefined);
    expect(() => lifecycle.onClose("store", () => undefined)).toThrow('shutdown step "store" is registered twice');
  });
});
