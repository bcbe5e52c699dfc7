/** Slots a second is counted in. */
const SLOTS = 20;
const SLOT_MS = 1000 / SLOTS;

/**
 * A counter of events that turns true once more than `cap` of them fell within one second
 * (0 = never). The second is a sliding one, counted in slots of 1/20 s, the current slot
 * included: what is counted reaches back at least a second and at most one slot more, so no
 * span of a second lets more than `cap` through (a window restarted every second let twice
 * the cap through across a restart), at the price of counting a span one slot longer than a
 * second as one.
 */
export function perSecondCap(cap: number, now: () => number = () => performance.now()): () => boolean {
  if (cap <= 0) return () => false;
  const counts = new Uint32Array(SLOTS + 1);
  let slot = Math.floor(now() / SLOT_MS);
  let total = 0;
  return () => {
    const current = Math.floor(now() / SLOT_MS);
    // Slots that fell out of the window are emptied (all of them after a long pause).
    for (let passed = slot + 1; passed <= Math.min(current, slot + counts.length); passed++) {
      const i = passed % counts.length;
      total -= counts[i];
      counts[i] = 0;
    }
    slot = Math.max(slot, current);
    counts[slot % counts.length]++;
    total++;
    return total > cap;
  };
}
