import { useState } from "preact/hooks";
import type { KeyJson } from "../api/rest.ts";

/** A key's secret right after it was made: the only time the console (or the server) shows it. */
export function NewKey({ created, onDone, onUse }: { created: KeyJson; onDone: () => void; onUse?: (() => void) | undefined }) {
  const [copied, setCopied] = useState("");
  // No clipboard outside secure contexts (plain http on another host): then it says so.
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(created.key ?? "");
      setCopied("Copied.");
    } catch {
      setCopied("Could not copy: select the key and copy it.");
    }
  };
  return (
    <div class="card secret" role="status">
      <p>
        Key <strong>{created.name || created.prefix}</strong> created. Copy it now: it is not shown again.
      </p>
      <code class="mono" data-secret>
        {created.key}
      </code>
      <div class="row">
        <button type="button" onClick={() => void copy()}>
          Copy
        </button>
        {onUse && (
          <button type="button" onClick={onUse}>
            Sign in with this key
          </button>
        )}
        <button type="button" class="secondary" onClick={onDone}>
          Done
        </button>
        {copied && (
          <span class="muted" data-copied>
            {copied}
          </span>
        )}
      </div>
    </div>
  );
}
