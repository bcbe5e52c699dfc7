/** A counter of events in the current one-second window: true once it exceeds `cap` (0 = never). */
export function perSecondCap(cap: number): () => boolean {
  let windowStart = Date.now();
  let count = 0;
  return () => {
    if (cap <= 0) return false;
    const now = Date.now();
    if (now - windowStart >= 1000) {
      windowStart = now;
      count = 0;
    }
    return ++count > cap;
  };
}
