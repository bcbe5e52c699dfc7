/**
 * Child process of the large-parameter test: writes texts of `MB` megabytes through one SQL
 * text into a SQLite file, then a small one through the same text (which a cached statement
 * must bind, letting go of the large one), and prints the process's RSS after each, as JSON.
 * Run with glibc's `MALLOC_MMAP_THRESHOLD_` fixed, so that freed memory is returned and what
 * remains is what something still holds. `--expose-gc` serves the measurement only (the
 * store itself never collects).
 * Usage: node --expose-gc large-params-writer.ts <file> <MB> <writes>
 */
import { SqliteDatabase } from "../../src/store/sqlite/database.ts";

const [file, mb, writes] = process.argv.slice(2);
if (file === undefined || mb === undefined || writes === undefined) throw new Error("usage: large-params-writer.ts <file> <MB> <writes>");
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with --expose-gc");
const settledRss = async (): Promise<number> => {
  gc();
  await new Promise((resolve) => setTimeout(resolve, 200));
  return process.memoryUsage().rss;
};

const db = await SqliteDatabase.open(file);
await db.run("CREATE TABLE texts (id INTEGER PRIMARY KEY, body TEXT NOT NULL)");
const write = "INSERT OR REPLACE INTO texts (id, body) VALUES (?, ?)";
for (let i = 0; i < Number(writes); i++) await db.run(write, [1, String.fromCharCode(97 + i).repeat(Number(mb) * 1024 * 1024)]);
const afterLarge = await settledRss();
const row = await db.get<{ length: number; first: string }>("SELECT length(body) AS length, substr(body, 1, 1) AS first FROM texts WHERE id = 1");
await db.run(write, [2, "small"]);
const afterSmall = await settledRss();
await db.close();
process.stdout.write(`${JSON.stringify({ afterLarge, afterSmall, row })}\n`);
