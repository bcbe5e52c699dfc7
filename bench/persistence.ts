import type { BenchOptions, Row } from "./support.ts";
export async function runPersistence(_o: BenchOptions): Promise<Row[]> { return []; }
