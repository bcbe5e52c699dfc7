import { type SpawnedServer, spawnServer } from "../../support/server.ts";
import { type SessionClient, type SessionClientFactory, sessionClientFactory } from "../../support/session-client.ts";

/**
 * The server processes and grpc-js clients a process suite opened, so that `dispose` (its
 * `afterAll`) closes every client and kills every server, whatever a failing test left open.
 */
export class SuiteProcesses {
  readonly #servers: SpawnedServer[] = [];
  readonly #factories: SessionClientFactory[] = [];

  /** Starts the real CLI with `env` (see `spawnServer`). */
  async spawn(env: Record<string, string>): Promise<SpawnedServer> {
    const server = await spawnServer(env);
    this.#servers.push(server);
    return server;
  }

  /** Opens a StreamSession on `url` over its own grpc-js connection. */
  open(url: string): SessionClient {
    const factory = sessionClientFactory("grpc-js", url);
    this.#factories.push(factory);
    return factory.open();
  }

  async dispose(): Promise<void> {
    for (const factory of this.#factories) factory.close();
    for (const server of this.#servers) await server.dispose();
  }
}
