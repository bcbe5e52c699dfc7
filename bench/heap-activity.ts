/**
 * What the JS heap did over a measured run, from V8's own per-collection figures
 * (`v8.GCProfiler`, no flags): the bytes the program allocated, and the bytes that survived
 * a scavenge (young objects copied within the young generation or promoted to the old one).
 * Used inside a bench server child; the driver divides by the run's deltas.
 */
import { GCProfiler, getHeapStatistics } from "node:v8";

export interface HeapActivity {
  /** Bytes allocated on the JS heap over the run (young and old spaces). */
  allocatedBytes: number;
  /** Bytes that survived a scavenge, summed over the run's scavenges. */
  survivedBytes: number;
  scavenges: number;
  /** Full (mark-sweep) collections. */
  fullCollections: number;
  /** Time spent in collections, ms (V8's own `cost`). */
  pauseMs: number;
}

/** No collections, nothing allocated: a run nobody watched. */
export const NO_HEAP_ACTIVITY: HeapActivity = { allocatedBytes: 0, survivedBytes: 0, scavenges: 0, fullCollections: 0, pauseMs: 0 };

interface SpaceStats {
  spaceName: string;
  spaceUsedSize: number;
}

interface GcSample {
  gcType: string;
  cost: number;
  beforeGC: { heapStatistics: { usedHeapSize: number }; heapSpaceStatistics: SpaceStats[] };
  afterGC: { heapStatistics: { usedHeapSize: number } };
}

const YOUNG_SPACES = new Set(["new_space", "new_large_object_space"]);

const youngUsed = (spaces: readonly SpaceStats[]): number => spaces.reduce((n, s) => n + (YOUNG_SPACES.has(s.spaceName) ? s.spaceUsedSize : 0), 0);

/** Starts watching the heap; the returned function stops and reports. */
export function watchHeap(): () => HeapActivity {
  const profiler = new GCProfiler();
  const startUsed = getHeapStatistics().used_heap_size;
  profiler.start();
  return () => {
    const endUsed = getHeapStatistics().used_heap_size;
    const samples = (profiler.stop()?.statistics ?? []) as GcSample[];
    const activity: HeapActivity = { allocatedBytes: 0, survivedBytes: 0, scavenges: 0, fullCollections: 0, pauseMs: 0 };
    let usedAfterLast = startUsed;
    for (const gc of samples) {
      const before = gc.beforeGC.heapStatistics.usedHeapSize;
      const after = gc.afterGC.heapStatistics.usedHeapSize;
      // Between two collections the heap only grows by allocation.
      activity.allocatedBytes += Math.max(0, before - usedAfterLast);
      usedAfterLast = after;
      activity.pauseMs += gc.cost / 1000;
      if (gc.gcType === "Scavenge") {
        activity.scavenges++;
        // A scavenge frees only young objects: what is left of them survived.
        activity.survivedBytes += Math.max(0, after - (before - youngUsed(gc.beforeGC.heapSpaceStatistics)));
      } else if (gc.gcType === "MarkSweepCompact") activity.fullCollections++;
    }
    activity.allocatedBytes += Math.max(0, endUsed - usedAfterLast);
    return activity;
  };
}
