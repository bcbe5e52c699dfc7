import type { Http2Session } from "node:http2";

interface PingState {
  inFlight: boolean;
  waiting: Array<() => void>;
}

const states = new WeakMap<Http2Session, PingState>();

/**
 * Resolves after one HTTP/2 PING round trip sent after this call, so every frame the peer sent
 * before it has been processed. One PING per connection is in flight at a time: callers that
 * come while one is out share the next one (sent when it returns), so a client ending many
 * streams at once (or resetting them, see the rapid-reset guard) costs at most one PING per
 * round trip, not one per stream. Resolves at once when no PING can be sent.
 */
export function pingRoundTrip(session: Http2Session): Promise<void> {
  let state = states.get(session);
  if (!state) {
    state = { inFlight: false, waiting: [] };
    states.set(session, state);
  }
  const s = state;
  return new Promise<void>((resolve) => {
    s.waiting.push(resolve);
    if (!s.inFlight) sendPing(session, s);
  });
}

function sendPing(session: Http2Session, state: PingState): void {
  const batch = state.waiting;
  state.waiting = [];
  state.inFlight = true;
  const done = (): void => {
    state.inFlight = false;
    for (const resolve of batch) resolve();
    if (state.waiting.length > 0) sendPing(session, state);
  };
  if (session.destroyed || session.closed || !session.ping(done)) done();
}
