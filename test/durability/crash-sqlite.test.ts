// Issue 5, crash safety on the embedded store: SIGKILL the real server mid-turn, restart on the same ROZ_DATA_DIR.
import { sqliteBackend } from "./support/backend.ts";
import { defineCrashSuite } from "./support/crash-suite.ts";

defineCrashSuite("sqlite", sqliteBackend);
