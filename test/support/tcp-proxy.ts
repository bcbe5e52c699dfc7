/**
 * A TCP proxy on 127.0.0.1 in front of a server, for tests that break connections the way a
 * network does: `cut()` destroys every connection through it at once (both sides, no
 * half-close, no HTTP/2 GOAWAY), new connections keep working afterwards.
 */
import { createServer, type Server, type Socket, connect } from "node:net";
import type { AddressInfo } from "node:net";

export interface TcpProxy {
  /** `http://127.0.0.1:<port>` of the proxy. */
  readonly url: string;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Connections open now. */
  readonly open: number;
  /** Destroys every open connection (client and server side); returns how many there were. */
  cut(): number;
  close(): Promise<void>;
}

export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const { hostname, port } = new URL(target);
  const pairs = new Set<[Socket, Socket]>();
  let accepted = 0;
  const server: Server = createServer((client) => {
    accepted++;
    const upstream = connect(Number(port), hostname);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const drop = (): void => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const s of pair) {
      s.on("error", drop);
      s.on("close", drop);
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get accepted() {
      return accepted;
    },
    get open() {
      return pairs.size;
    },
    cut() {
      const n = pairs.size;
      for (const [a, b] of [...pairs]) {
        a.destroy();
        b.destroy();
      }
      pairs.clear();
      return n;
    },
    close() {
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
