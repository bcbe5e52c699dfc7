import { type BudgetJson, rest, restAll, type SessionJson } from "../api/rest.ts";
import { BarChart, type Bar } from "../components/bar-chart.tsx";
import { usePoll } from "../components/use-poll.ts";
import { num, usd } from "../format.ts";

const SERIES = [
  { name: "input", label: "fresh input" },
  { name: "cache_read", label: "cache hits" },
  { name: "output", label: "output" },
];

/** `input` counts the cached part too; the chart shows fresh input and cache hits apart. */
const segments = (u: SessionJson["usage"]) => [
  { series: "input", value: Math.max(0, u.input_tokens - u.cache_read_tokens) },
  { series: "cache_read", value: u.cache_read_tokens },
  { series: "output", value: u.output_tokens },
];

const sum = (list: SessionJson[]) =>
  list.reduce(
    (a, s) => ({
      input_tokens: a.input_tokens + s.usage.input_tokens,
      output_tokens: a.output_tokens + s.usage.output_tokens,
      cache_read_tokens: a.cache_read_tokens + s.usage.cache_read_tokens,
      cache_creation_tokens: a.cache_creation_tokens + s.usage.cache_creation_tokens,
      cost_usd: a.cost_usd + (s.usage.cost_usd ?? 0),
    }),
    { input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_creation_tokens: 0, cost_usd: 0 },
  );

/** "spent of limit", or only what was spent when there is no limit. */
const ofLimit = (spent: string, limit: string | undefined): string => (limit === undefined ? `${spent} (no limit)` : `${spent} of ${limit}`);

/** The tenant's monthly budget (set by the operator with `roz budgets set`) and this month's spend. */
function MonthlyBudget({ budget }: { budget: BudgetJson }) {
  return (
    <>
      <h2>This month ({budget.month}, UTC)</h2>
      <dl class="totals">
        <div>
          <dt>tokens</dt>
          <dd data-budget="tokens">{ofLimit(num(budget.spent_tokens), budget.monthly_tokens === null ? undefined : num(budget.monthly_tokens))}</dd>
        </div>
        <div>
          <dt>cost</dt>
          <dd data-budget="cost">{ofLimit(usd(budget.spent_cost_usd), budget.monthly_cost_usd === null ? undefined : usd(budget.monthly_cost_usd))}</dd>
        </div>
      </dl>
    </>
  );
}

/** Tokens per day (by session start, UTC) for the last 30 days with sessions. */
function perDay(sessions: SessionJson[]): Bar[] {
  const days = new Map<string, SessionJson[]>();
  for (const s of sessions) {
    const day = s.created_at.slice(0, 10);
    days.set(day, [...(days.get(day) ?? []), s]);
  }
  return [...days.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .slice(-30)
    .map(([day, list]) => ({ label: day.slice(5), segments: segments(sum(list)) }));
}

/** The 30 sessions that used the most tokens. */
function perSession(sessions: SessionJson[]): Bar[] {
  const total = (s: SessionJson) => s.usage.input_tokens + s.usage.output_tokens;
  return [...sessions]
    .filter((s) => total(s) > 0)
    .sort((a, b) => total(b) - total(a))
    .slice(0, 30)
    .map((s) => ({ label: s.id.slice(0, 4), segments: segments(s.usage) }));
}

export function UsageView() {
  // Archived sessions used tokens too: the list leaves them out unless asked.
  const { value: sessions, error } = usePoll(() => restAll<SessionJson>("/v1/sessions?archived=any"), 10_000);
  const { value: budget } = usePoll(() => rest<BudgetJson>("GET", "/v1/budget"), 10_000);
  const all = sum(sessions ?? []);
  const hitRate = all.input_tokens > 0 ? Math.round((all.cache_read_tokens / all.input_tokens) * 100) : 0;
  return (
    <section class="page" aria-labelledby="usage-title">
      <div class="page-head">
        <h1 id="usage-title">Usage</h1>
      </div>
      {error && (
        <p class="field-error" role="alert">
          {error}
        </p>
      )}
      {sessions && (
        <>
          <dl class="totals">
            <div>
              <dt>input</dt>
              <dd data-total="input">{num(all.input_tokens)}</dd>
            </div>
            <div>
              <dt>output</dt>
              <dd data-total="output">{num(all.output_tokens)}</dd>
            </div>
            <div>
              <dt>cache hits</dt>
              <dd data-total="cache_read">
                {num(all.cache_read_tokens)} ({hitRate} % of input)
              </dd>
            </div>
            <div>
              <dt>cache writes</dt>
              <dd>{num(all.cache_creation_tokens)}</dd>
            </div>
            <div>
              <dt>cost</dt>
              <dd data-total="cost">{usd(all.cost_usd)}</dd>
            </div>
          </dl>
          {budget && <MonthlyBudget budget={budget} />}
          <h2>Tokens per day</h2>
          <BarChart bars={perDay(sessions)} series={SERIES} label="Tokens per day: fresh input, cache hits and output" />
          <h2>Tokens per session (top 30)</h2>
          <BarChart bars={perSession(sessions)} series={SERIES} label="Tokens per session: fresh input, cache hits and output" />
        </>
      )}
    </section>
  );
}
