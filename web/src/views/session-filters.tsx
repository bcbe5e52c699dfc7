import { useState } from "preact/hooks";

/** What the sessions screen asks `GET /v1/sessions` for. */
export interface SessionFilters {
  q: string;
  status: "" | "active" | "detached" | "completed" | "cancelled" | "error";
  archived: "false" | "true" | "any";
}

export const noFilters: SessionFilters = { q: "", status: "", archived: "false" };

/** The list route's query string for `filters` (the server's defaults are left out). */
export function filterQuery(filters: SessionFilters): string {
  const params = new URLSearchParams();
  if (filters.q.trim() !== "") params.set("q", filters.q.trim());
  if (filters.status !== "") params.set("status", filters.status);
  if (filters.archived !== "false") params.set("archived", filters.archived);
  const query = params.toString();
  return query === "" ? "" : `?${query}`;
}

/**
 * The search box (full-text over titles and messages, applied on Enter) and the status and
 * archive filters (applied at once).
 */
export function FilterBar({ filters, onChange }: { filters: SessionFilters; onChange: (filters: SessionFilters) => void }) {
  const [q, setQ] = useState(filters.q);
  return (
    <form
      class="row filters"
      aria-label="Find sessions"
      onSubmit={(e) => {
        e.preventDefault();
        onChange({ ...filters, q });
      }}
    >
      <input
        type="search"
        aria-label="Search sessions"
        placeholder="Search titles and messages"
        maxLength={256}
        value={q}
        onInput={(e) => setQ(e.currentTarget.value)}
      />
      <button class="button" type="submit">
        Search
      </button>
      <select aria-label="Status" value={filters.status} onChange={(e) => onChange({ ...filters, status: e.currentTarget.value as SessionFilters["status"] })}>
        <option value="">any status</option>
        {["active", "detached", "completed", "cancelled", "error"].map((s) => (
          <option key={s} value={s}>
            {s}
          </option>
        ))}
      </select>
      <select
        aria-label="Archived"
        value={filters.archived}
        onChange={(e) => onChange({ ...filters, archived: e.currentTarget.value as SessionFilters["archived"] })}
      >
        <option value="false">not archived</option>
        <option value="true">archived only</option>
        <option value="any">archived or not</option>
      </select>
    </form>
  );
}
