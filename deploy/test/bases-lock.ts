/**
 * One maker of base images at a time per engine folder: CI starts making them in the background
 * while it installs and checks (deploy/test/prepare-bases.ts), and the image test, when it comes,
 * waits for that to end and then finds them made. A lock whose process is gone is taken over.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
};

function holderOf(lock: string): number | undefined {
  try {
    return Number(readFileSync(join(lock, "pid"), "utf8"));
  } catch {
    return undefined;
  }
}

/** Runs `make` holding the folder's lock, after any other live holder has let go. */
export async function withBasesLock<T>(dir: string, make: () => Promise<T>, log: (line: string) => void): Promise<T> {
  const lock = join(dir, "bases.lock");
  let waitingSaid = false;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, "pid"), String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const holder = holderOf(lock);
      // A lock without its pid yet is being taken right now; one whose process died is stale.
      if (holder !== undefined && !Number.isNaN(holder) && !alive(holder)) {
        rmSync(lock, { recursive: true, force: true });
        continue;
      }
      if (!waitingSaid) log(`waiting for process ${holder ?? "?"} to finish making the base images`);
      waitingSaid = true;
      await sleep(1000);
    }
  }
  try {
    return await make();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
