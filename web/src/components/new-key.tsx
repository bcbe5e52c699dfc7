import type { KeyJson } from "../api/rest.ts";

/** A key's secret right after it was made: the only time the console (or the server) shows it. */
export function NewKey({ created, onDone, onUse }: { created: KeyJson; onDone: () => void; onUse?: (() => void) | undefined }) {
  return (
    <div class="card secret" role="status">
      <p>
        Key <strong>{created.name || created.prefix}</strong> created. Copy it now: it is not shown again.
      </p>
      <code class="mono" data-secret>
        {created.key}
      </code>
      <div class="row">
        {onUse && (
          <button type="button" onClick={onUse}>
            Sign in with this key
          </button>
        )}
        <button type="button" class="secondary" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}
