/**
 * Keeping relays alive: every `KEEP_MS` a node tells each owner, in one request, which of its
 * relays are still wanted (which also notices an owner that is gone); an owner ends the hosted
 * streams not wanted for `KEEP_ROUNDS` rounds (their client node died).
 */
export const KEEP_MS = 2_000;
export const KEEP_ROUNDS = 10;

/** The relays grouped by owner node, each relay visited once (a round stays linear in relays). */
export function byOwner<R extends { readonly owner: string }>(relays: Iterable<R>): Map<string, R[]> {
  return Map.groupBy(relays, (relay) => relay.owner);
}
