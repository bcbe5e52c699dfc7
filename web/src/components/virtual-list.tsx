import type { ComponentChildren } from "preact";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";

export interface VirtualListProps<T> {
  items: readonly T[];
  /** Expected row height in px until a row is measured. */
  estimate: number;
  renderRow: (item: T, index: number) => ComponentChildren;
  /** Keeps the view at the bottom while items arrive or grow (transcripts), unless the user scrolled up. */
  stickToBottom?: boolean;
  label: string;
  class?: string;
  /** Extra px drawn above and below the visible window. */
  overscan?: number;
}

/**
 * Draws only the rows in view: 1,000 sessions or a 10,000-message transcript cost a few
 * dozen DOM rows. Rows may have any height: each drawn row is measured after layout and
 * its height kept, so positions become exact as the user scrolls (append-only lists: a
 * row's index is its identity).
 */
export function VirtualList<T>({ items, estimate, renderRow, stickToBottom = false, label, class: cls = "", overscan = 600 }: VirtualListProps<T>) {
  const viewport = useRef<HTMLDivElement>(null);
  const heights = useRef<number[]>([]);
  const [scroll, setScroll] = useState({ top: 0, height: 600 });
  const [, setMeasured] = useState(0);
  const atBottom = useRef(true);
  // Rows that change height on their own (a thinking block opened) are measured again.
  const rowObserver = useRef<ResizeObserver | null>(null);
  rowObserver.current ??= new ResizeObserver(() => setMeasured((n) => n + 1));

  const offsets = new Array<number>(items.length + 1);
  offsets[0] = 0;
  for (let i = 0; i < items.length; i++) offsets[i + 1] = (offsets[i] as number) + (heights.current[i] ?? estimate);
  const total = offsets[items.length] as number;

  // First row ending below the window top (binary search over the offsets).
  let lo = 0;
  let hi = items.length;
  const from = Math.max(0, scroll.top - overscan);
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((offsets[mid + 1] as number) <= from) lo = mid + 1;
    else hi = mid;
  }
  const first = lo;
  const until = scroll.top + scroll.height + overscan;
  let last = first;
  while (last < items.length && (offsets[last] as number) < until) last++;

  useLayoutEffect(() => {
    const el = viewport.current;
    if (!el) return;
    let changed = false;
    for (const row of el.querySelectorAll<HTMLElement>("[data-index]")) {
      rowObserver.current?.observe(row);
      const i = Number(row.dataset["index"]);
      const h = row.offsetHeight;
      if (h > 0 && heights.current[i] !== h) {
        heights.current[i] = h;
        changed = true;
      }
    }
    if (changed) setMeasured((n) => n + 1);
    if (stickToBottom && atBottom.current) el.scrollTop = el.scrollHeight;
  });

  useEffect(() => {
    const el = viewport.current;
    if (!el) return undefined;
    const onScroll = () => {
      atBottom.current = el.scrollTop + el.clientHeight >= el.scrollHeight - 24;
      setScroll({ top: el.scrollTop, height: el.clientHeight });
    };
    onScroll();
    el.addEventListener("scroll", onScroll, { passive: true });
    const resize = new ResizeObserver(onScroll);
    resize.observe(el);
    return () => {
      el.removeEventListener("scroll", onScroll);
      resize.disconnect();
      rowObserver.current?.disconnect();
    };
  }, []);

  const rows = [];
  for (let i = first; i < last; i++) {
    rows.push(
      // biome-ignore lint/a11y/useSemanticElements: rows are positioned absolutely inside the spacer; ul/li would bring list layout back
      <div role="listitem" class="vrow" key={i} data-index={i} style={{ transform: `translateY(${offsets[i]}px)` }}>
        {renderRow(items[i] as T, i)}
      </div>,
    );
  }
  return (
    // A scrolling region must be focusable so keyboard users can scroll it (WCAG 2.1.1).
    // biome-ignore lint/a11y/noNoninteractiveTabindex: see above
    // biome-ignore lint/a11y/useSemanticElements: the viewport's element is measured and scrolled as a div
    <div ref={viewport} class={`vlist ${cls}`} role="region" tabIndex={0} aria-label={label} data-count={items.length}>
      {/* biome-ignore lint/a11y/useSemanticElements: see the rows above */}
      <div role="list" class="vspacer" style={{ height: `${total}px` }}>
        {rows}
      </div>
    </div>
  );
}
