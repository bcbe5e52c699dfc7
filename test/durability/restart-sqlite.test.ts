// Sessions survive SIGTERM and SIGKILL restarts on the embedded store.
import { sqliteBackend } from "./support/backend.ts";
import { defineRestartSuite } from "./support/restart-suite.ts";

defineRestartSuite("sqlite", sqliteBackend);
