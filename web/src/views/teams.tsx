import { RozError } from "@roz/client";
import { useEffect, useState } from "preact/hooks";
import { rest, RestError } from "../api/rest.ts";
import type { AgentClient } from "../api/rpc.ts";
import { href } from "../router.ts";
import { applyTeamEvent, emptyTeam, type TeamState, type Worker } from "../session/team.ts";

interface TaskJson {
  id: string;
  status?: string;
  created_at?: string;
}

/** One lane per worker: its span from start to end, with a tick per phase and tool call. */
function Lanes({ team, now }: { team: TeamState; now: number }) {
  if (team.workers.length === 0) return <p class="muted">No workers yet.</p>;
  const t0 = Math.min(...team.workers.map((w) => w.startedAt));
  const t1 = Math.max(now, ...team.workers.map((w) => w.endedAt ?? now));
  const span = Math.max(1, t1 - t0);
  const LABEL = 84;
  const x = (t: number) => LABEL + ((t - t0) / span) * (596 - LABEL);
  const laneH = 28;
  return (
    <svg class="lanes" viewBox={`0 0 600 ${team.workers.length * laneH + 8}`} role="img" aria-label="Workers over time">
      {team.workers.map((w, i) => (
        <g class={`lane ${w.state}`} transform={`translate(0 ${i * laneH + 4})`}>
          <title>{`${w.id}: ${w.state}`}</title>
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
      {tasks && tasks.length > 0 && (
        <ul class="tasks">
          {tasks.map((t) => (
            <li>
              <a href={href.teams(t.id)} aria-current={t.id === taskId ? "page" : undefined}>
                <span class="mono">{t.id.slice(0, 8)}</span> {t.status ?? ""}
              </a>
            </li>
          ))}
        </ul>
      )}
      {taskId && <TeamWatch taskId={taskId} client={client} />}
    </section>
  );
}
