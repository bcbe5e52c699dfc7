import type { SessionDeps, SessionDirectory, SessionRegistry, SessionStream, StreamSlots } from "../session/index.ts";
import type { Teams } from "../teams/index.ts";
import type { AtCapRefusals } from "./at-cap-refusals.ts";
import type { RpcAuthenticator } from "./context-values.ts";
import type { EventFormat } from "./event-format.ts";
import type { RelayPort } from "./relay-port.ts";

export interface StreamSessionDeps {
  session: SessionDeps;
  registry: SessionRegistry;
  directory: SessionDirectory;
  authenticate: RpcAuthenticator;
  /** Open streams, so that shutdown can end them. */
  openStreams: Set<SessionStream>;
  /** The event format of streams whose metadata chooses none (`ROZ_EVENT_FORMAT`). */
  defaultEventFormat: EventFormat;
  /** Tasks, for WatchTeam. */
  teams: Pick<Teams, "watch">;
  /** Open WatchTeam calls, so that shutdown can end them. */
  openWatches: Set<AbortController>;
  /** Caps the streams open at once per key (none when absent). */
  streamSlots?: StreamSlots;
  /** Told of each stream refused for its key's cap, so that the next ones are refused before routing. */
  atCapRefusals?: Pick<AtCapRefusals, "remember">;
  /**
   * How often, at most, an open stream re-checks its credentials (on its next request), so
   * that revoking or expiring a key reaches its open sessions; 0 checks every request. Absent:
   * never re-checked.
   */
  credentialRecheckMs?: number;
  /**
   * How often this process saw a key revoked or rotated: when it changed since a stream's last
   * check, the stream re-checks its key on its next request, whatever the interval.
   */
  revocationsOf?: (keyId: string) => number;
  /** Tells `listener` of each such revocation (streams without requests check at once); returns the unsubscribe. */
  onRevocation?: (listener: (keyId: string) => void) => () => void;
  /** Told about each request before it is handled (the event-loop watchdog names what ran). */
  noteOperation?: (operation: Record<string, unknown>) => void;
  /** Relays streams of sessions that other nodes own (absent on a single node). */
  relay?: RelayPort;
  /**
   * How long a relayed stream whose owner was lost looks for the session's new place (another
   * node, or this one once the old owner's heartbeat expired) before it ends with UNAVAILABLE.
   */
  relocateWithinMs?: number;
}
