/** A session page's heading: its title (else "Session") and its id, short, with the whole id on hover. */
export function SessionHeading({ headingId, id, title }: { headingId: string; id: string; title?: string | undefined }) {
  return (
    <h1 id={headingId} data-session-id={id}>
      {title || "Session"}{" "}
      <span class="mono muted" title={id}>
        {id.slice(0, 8)}
      </span>
    </h1>
  );
}
