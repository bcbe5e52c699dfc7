// Sessions nobody runs, on SQLite (one data dir shared by the processes).
import { sqliteBackend } from "./support/backend.ts";
import { defineOrphanSuite } from "./support/orphan-suite.ts";

defineOrphanSuite("sqlite", sqliteBackend);
