// Sessions nobody runs, on PostgreSQL (the sweep's conditional updates under concurrent connections).
import { onPostgres } from "./support/backend.ts";
import { defineOrphanSuite } from "./support/orphan-suite.ts";

await onPostgres("sessions nobody runs", (makeBackend) => defineOrphanSuite("postgres", makeBackend));
