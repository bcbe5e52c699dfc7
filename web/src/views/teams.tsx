import { RozError } from "@roz/client";
import { useEffect, useState } from "preact/hooks";
import { rest, RestError } from "../api/rest.ts";
import type { AgentClient } from "../api/rpc.ts";
import { ago, duration, num } from "../format.ts";
import { href } from "../router.ts";
import { applyTeamEvent, emptyTeam, type TeamState, type Worker } from "../session/team.ts";

interface TaskJson {
  id: string;
  status?: string;
  prompt?: string;
  created_at?: string;
  ended_at?: string;
  usage?: { input_tokens: number; output_tokens: number };
}

/** Seconds between time-axis ticks: the first step that gives at most six ticks. */
const TICK_STEPS_S = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200];
const tickStep = (spanMs: number): number => (TICK_STEPS_S.find((s) => spanMs / (s * 1000) <= 6) ?? 14_400) * 1000;

/** One lane per worker: its span from start to end, with a tick per phase and tool call, over a time axis from the first start. */
function Lanes({ team, now }: { team: TeamState; now: number }) {
  if (team.workers.length === 0) return <p class="muted">No workers yet.</p>;
  const t0 = Math.min(...team.workers.map((w) => w.startedAt));
  // Up to now while a worker runs; a finished team's axis ends with its last worker.
  const ends = team.workers.map((w) => w.endedAt);
  const t1 = ends.every((e) => e !== undefined) ? Math.max(...(ends as number[])) : now;
  const span = Math.max(1, t1 - t0);
  const LABEL = 84;
  const x = (t: number) => LABEL + ((t - t0) / span) * (584 - LABEL);
  const laneH = 28;
  const axisY = team.workers.length * laneH + 6;
  const step = tickStep(span);
  const ticks = Array.from({ length: Math.floor(span / step) + 1 }, (_, i) => t0 + i * step);
  return (
    <svg class="lanes" viewBox={`0 0 600 ${axisY + 22}`} role="img" aria-label={`Workers over time: ${duration(span)} from the first start`}>
      <g class="axis" data-axis>
        <line class="axis-line" x1={LABEL} x2={584} y1={axisY} y2={axisY} />
        {ticks.map((t) => (
          <g>
            <line class="grid" x1={x(t)} x2={x(t)} y1={2} y2={axisY + 4} />
            <text class="tick" x={x(t)} y={axisY + 16} text-anchor="middle">
              {t === t0 ? "0" : duration(t - t0)}
            </text>
          </g>
        ))}
      </g>
      {team.workers.map((w, i) => (
        <g class={`lane ${w.state}`} transform={`translate(0 ${i * laneH + 4})`}>
          <title>{`${w.id}: ${w.state}, ${duration((w.endedAt ?? now) - w.startedAt)}`}</title>
          <text class="lane-label" x={4} y={laneH / 2 + 4}>
            {w.id.slice(0, 8)}
          </text>
          <rect class="span" x={x(w.startedAt)} y={4} width={Math.max(2, x(w.endedAt ?? now) - x(w.startedAt))} height={laneH - 8} rx={3} />
          {w.marks.map((m) => (
            <line class="mark" x1={x(m.at)} x2={x(m.at)} y1={2} y2={laneH - 2}>
              <title>{m.label}</title>
            </line>
          ))}
        </g>
      ))}
    </svg>
  );
}

/** The tenant's recent tasks: status, when they started, how long they ran, their prompt and tokens. */
function TaskList({ tasks, current }: { tasks: TaskJson[]; current: string | undefined }) {
  const now = Date.now();
  return (
    <table class="table tasks">
      <thead>
        <tr>
          <th>task</th>
          <th>status</th>
          <th>started</th>
          <th>ran</th>
          <th>prompt</th>
          <th class="num">tokens</th>
        </tr>
      </thead>
      <tbody>
        {tasks.map((t) => {
          const started = t.created_at ? Date.parse(t.created_at) : undefined;
          const ended = t.ended_at ? Date.parse(t.ended_at) : undefined;
          return (
            <tr data-task={t.id} aria-current={t.id === current ? "true" : undefined}>
              <td>
                <a class="mono" href={href.teams(t.id)} title={t.id}>
                  {t.id.slice(0, 8)}
                </a>
              </td>
              <td>
                <span class={`status ${t.status ?? ""}`}>{t.status ?? "–"}</span>
              </td>
              <td title={t.created_at}>{t.created_at ? ago(t.created_at) : "–"}</td>
              <td>{started === undefined ? "–" : ended !== undefined ? duration(ended - started) : `${duration(now - started)} so far`}</td>
              <td class="prompt" title={t.prompt}>
                {t.prompt ?? ""}
              </td>
              <td class="num">{t.usage ? num(t.usage.input_tokens + t.usage.output_tokens) : "–"}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function WorkerRow({ w }: { w: Worker }) {
  return (
    <tr data-worker={w.id} data-state={w.state}>
      <td class="mono" title={w.id}>
        {w.id.slice(0, 8)}
      </td>
      <td>
        <span class={`status ${w.state}`}>{w.state}</span>
        {w.exited && <span class="muted"> · exited</span>}
      </td>
      <td>{w.phase > 0 ? `${w.phase} (${w.mode})` : "–"}</td>
      <td>{w.tool || "–"}</td>
      <td class="result">{w.result}</td>
    </tr>
  );
}

/** A task's workers, live from WatchTeam (replayed from the start, then streamed until the task ends). */
function TeamWatch({ taskId, client }: { taskId: string; client: AgentClient }) {
  const [team, setTeam] = useState<TeamState>(emptyTeam);
  const [status, setStatus] = useState("connecting…");
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const abort = new AbortController();
    const tick = setInterval(() => setNow(Date.now()), 1000);
    void (async () => {
      try {
        let state = emptyTeam();
        for await (const e of client.watchTeam(taskId, { signal: abort.signal })) {
          state = applyTeamEvent(state, e);
          setTeam(state);
          setStatus("live");
        }
        setStatus("finished");
      } catch (err) {
        if (abort.signal.aborted) return;
        const e = err instanceof RozError ? err : new RozError("unknown", String(err));
        setStatus(e.code === "not_found" ? `no task ${taskId} (or this server has no teams yet)` : `stream failed: ${e.message}`);
      } finally {
        clearInterval(tick);
        setNow(Date.now());
      }
    })();
    return () => {
      abort.abort();
      clearInterval(tick);
    };
  }, [taskId]);
  const done = team.workers.filter((w) => w.state === "completed").length;
  const failed = team.workers.filter((w) => w.state === "failed").length;
  return (
    <div>
      <p role="status" aria-live="polite" data-team-status={status}>
        Task <span class="mono">{taskId}</span>: {status} · {team.workers.length} workers · {done} done · {failed} failed
      </p>
      <Lanes team={team} now={now} />
      <table class="table">
        <thead>
          <tr>
            <th>worker</th>
            <th>state</th>
            <th>phase</th>
            <th>tool</th>
            <th>result</th>
          </tr>
        </thead>
        <tbody>
          {team.workers.map((w) => (
            <WorkerRow w={w} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Tasks (from REST where the server lists them) and one task's team. */
export function TeamsView({ taskId, client }: { taskId?: string | undefined; client: AgentClient }) {
  const [tasks, setTasks] = useState<TaskJson[] | undefined>();
  const [note, setNote] = useState("");
  const [typed, setTyped] = useState("");
  useEffect(() => {
    rest<{ items: TaskJson[] }>("GET", "/v1/tasks?limit=50").then(
      (p) => setTasks(p.items),
      (err: unknown) => setNote(err instanceof RestError && err.status === 404 ? "This server does not list tasks; enter a task id." : (err as Error).message),
    );
  }, []);
  return (
    <section class="page" aria-labelledby="teams-title">
      <div class="page-head">
        <h1 id="teams-title">Teams</h1>
      </div>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          if (typed.trim()) location.hash = href.teams(typed.trim());
        }}
      >
        <label for="task-id">Task id</label>
        <input id="task-id" class="mono" value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />
        <button type="submit">Watch</button>
      </form>
      {note && <p class="muted">{note}</p>}
      {tasks && tasks.length > 0 && <TaskList tasks={tasks} current={taskId} />}
      {taskId && <TeamWatch taskId={taskId} client={client} />}
    </section>
  );
}
