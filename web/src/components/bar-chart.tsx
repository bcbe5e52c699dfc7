/** One bar: stacked segments, each with its series name. */
export interface Bar {
  label: string;
  segments: { series: string; value: number }[];
}

const W = 720;
const H = 220;
const PAD = { left: 64, bottom: 36, top: 8, right: 8 };

/**
 * Stacked bars in SVG; colours come from CSS classes (`series-<name>`), so light and dark
 * themes apply. Every bar has a <title> and the chart a table twin for screen readers.
 */
export function BarChart({ bars, label, series }: { bars: readonly Bar[]; label: string; series: readonly { name: string; label: string }[] }) {
  const max = Math.max(1, ...bars.map((b) => b.segments.reduce((a, s) => a + s.value, 0)));
  const inner = { w: W - PAD.left - PAD.right, h: H - PAD.top - PAD.bottom };
  const bw = Math.min(56, bars.length ? inner.w / bars.length : inner.w);
  const y = (v: number) => (v / max) * inner.h;
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={label}>
        <line class="axis" x1={PAD.left} x2={W - PAD.right} y1={H - PAD.bottom} y2={H - PAD.bottom} />
        <text class="tick" x={PAD.left - 6} y={PAD.top + 10} text-anchor="end">
          {max.toLocaleString("en-US")}
        </text>
        <text class="tick" x={PAD.left - 6} y={H - PAD.bottom} text-anchor="end">
          0
        </text>
        {bars.map((b, i) => {
          let base = H - PAD.bottom;
          return (
            <g data-bar={b.label}>
              <title>{`${b.label}: ${b.segments.map((s) => `${series.find((x) => x.name === s.series)?.label ?? s.series} ${s.value.toLocaleString("en-US")}`).join(", ")}`}</title>
              {b.segments.map((s) => {
                const h = y(s.value);
                base -= h;
                return <rect class={`series-${s.series}`} x={PAD.left + i * bw + bw * 0.1} width={Math.max(1, bw * 0.8)} y={base} height={h} />;
              })}
              {bars.length <= 31 && (
                <text class="tick" x={PAD.left + i * bw + bw / 2} y={H - PAD.bottom + 14} text-anchor="middle">
                  {b.label}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <figcaption>
        {series.map((s) => (
          <span class="legend">
            <span class={`swatch series-${s.name}`} aria-hidden="true" /> {s.label}
          </span>
        ))}
      </figcaption>
    </figure>
  );
}
