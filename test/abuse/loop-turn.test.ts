// What the request reader waits for before handling a request that starts work: the event
// loop's next poll, not merely the end of the current one. Observed from a real socket's
// data callback (the phase in which a decoded request reaches the reader).
import net from "node:net";
import { expect, it } from "vitest";
import { afterPendingIo } from "../../src/domain/index.ts";

/** Runs `inIoCallback` from the data callback of a loopback socket; resolves with what it resolves. */
async function fromIoCallback<T>(inIoCallback: () => Promise<T>): Promise<T> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const { port } = server.address() as net.AddressInfo;
    const result = new Promise<T>((resolve, reject) => {
      server.once("connection", (socket) => socket.once("data", () => inIoCallback().then(resolve, reject)));
    });
    const client = net.connect(port, "127.0.0.1", () => client.write("x"));
    try {
      return await result;
    } finally {
      client.destroy();
    }
  } finally {
    server.close();
  }
}

it("afterPendingIo resolves after the next loop iteration's timers, where a setImmediate does not", async () => {
  const order = await fromIoCallback(async () => {
    const seen: string[] = [];
    setTimeout(() => seen.push("timer due in the next iteration"), 0);
    const busyUntil = performance.now() + 3; // the timer is due once this iteration ends
    while (performance.now() < busyUntil);
    setImmediate(() => seen.push("setImmediate"));
    await afterPendingIo();
    seen.push("afterPendingIo");
    return seen;
  });
  expect(order).toEqual(["setImmediate", "timer due in the next iteration", "afterPendingIo"]);
});
