import { useState } from "preact/hooks";
import { rest, type SessionJson } from "../api/rest.ts";
import { ago, num, usd } from "../format.ts";
import { href } from "../router.ts";

/** A change of a session's title or archived flag (`PATCH /v1/sessions/{id}`). */
const patch = (id: string, body: { title?: string | null; archived?: boolean }) => rest<SessionJson>("PATCH", `/v1/sessions/${id}`, body);

/** The title being edited: Enter saves (an empty title removes it), Escape cancels. */
function TitleEditor({ s, done }: { s: SessionJson; done: (changed: boolean) => void }) {
  const [title, setTitle] = useState(s.title ?? "");
  const [error, setError] = useState("");
  const save = async () => {
    try {
      await patch(s.id, { title: title.trim() === "" ? null : title.trim() });
      done(true);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <form
      class="title-editor"
      onSubmit={(e) => {
        e.preventDefault();
        void save();
      }}
    >
      <input
        aria-label={`Title of session ${s.id.slice(0, 8)}`}
        value={title}
        maxLength={256}
        ref={(el) => el?.focus()}
        onInput={(e) => setTitle(e.currentTarget.value)}
        onKeyDown={(e) => e.key === "Escape" && done(false)}
      />
      <button class="button" type="submit">
        Save
      </button>
      {error && (
        <span class="field-error" role="alert">
          {error}
        </span>
      )}
    </form>
  );
}

/** One session: a link to its transcript, then renaming and archiving. */
export function SessionRow({ s, changed }: { s: SessionJson; changed: () => void }) {
  const [editing, setEditing] = useState(false);
  const [error, setError] = useState("");
  const archive = () =>
    patch(s.id, { archived: !s.archived }).then(changed, (err: unknown) => {
      setError((err as Error).message);
    });
  return (
    <div class="srow-wrap">
      <a class="srow" href={href.session(s.id)} data-session={s.id} data-archived={s.archived ? "true" : "false"}>
        <span class={`status ${s.status}`} title={s.end_reason && `ended: ${s.end_reason}`}>
          {s.status}
        </span>
        <span class="mono" title={s.id}>
          {s.id.slice(0, 8)}
        </span>
        <span class="title" title={s.title}>
          {s.title ?? <span class="muted">untitled</span>}
        </span>
        {/* data-label names a value where the column heads are hidden (narrow screens). */}
        <span class="model">{s.model}</span>
        <span class="num" data-label="turns">
          {num(s.turn_count)}
        </span>
        <span class="num" data-label="tokens" title={`cache read ${num(s.usage.cache_read_tokens)}, cost ${usd(s.usage.cost_usd ?? 0)}`}>
          {num(s.usage.input_tokens + s.usage.output_tokens)}
        </span>
        <span class="num" data-label="attached" data-attached={s.attached_streams}>
          {s.attached_streams ?? "–"}
        </span>
        <span class="num" data-label="last activity" title={s.updated_at}>
          {ago(s.updated_at)}
        </span>
      </a>
      <span class="srow-actions">
        {editing ? (
          <TitleEditor
            s={s}
            done={(didChange) => {
              setEditing(false);
              if (didChange) changed();
            }}
          />
        ) : (
          <>
            <button class="link" type="button" aria-label={`Rename session ${s.id.slice(0, 8)}`} onClick={() => setEditing(true)}>
              rename
            </button>
            <button
              class="link"
              type="button"
              aria-label={`${s.archived ? "Unarchive" : "Archive"} session ${s.id.slice(0, 8)}`}
              onClick={() => void archive()}
            >
              {s.archived ? "unarchive" : "archive"}
            </button>
          </>
        )}
        {error && (
          <span class="field-error" role="alert">
            {error}
          </span>
        )}
      </span>
    </div>
  );
}
