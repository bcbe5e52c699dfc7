// A statement run with multi-megabyte parameters does not keep them once it has run: SQLite
// holds a statement's bound values until it is bound again, so a cached statement would keep
// the last large snapshot of every SQL text alive.
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect, it } from "vitest";

const WRITER = fileURLToPath(new URL("./large-params-writer.ts", import.meta.url));
const MB = 1024 * 1024;
/** `MALLOC_MMAP_THRESHOLD_` is glibc's: elsewhere freed memory need not return, and the RSS proves nothing. */
const glibc = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime !== undefined;

it.skipIf(!glibc)(
  "after 16 MB writes, the statement holds nothing that a small write through the same SQL would free; the last write is stored",
  async () => {
    const dir = await mkdtemp(join(tmpdir(), "roz-large-params-"));
    try {
      const { stdout } = await promisify(execFile)(process.execPath, ["--expose-gc", WRITER, join(dir, "db.sqlite"), "16", "3"], {
        env: { ...process.env, MALLOC_MMAP_THRESHOLD_: String(128 * 1024) },
      });
      const { afterLarge, afterSmall, row } = JSON.parse(stdout) as { afterLarge: number; afterSmall: number; row: { length: number; first: string } };
      expect(row).toEqual({ length: 16 * MB, first: "c" });
      // A cached statement holding the last 16 MB value lets go of it only at the small write.
      expect((afterLarge - afterSmall) / MB).toBeLessThan(6);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
  60_000,
);
