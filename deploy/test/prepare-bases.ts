/**
 * Makes the image test's base images ahead of the test (`npm run image:bases`): CI runs it in
 * the background while it installs and checks, so the image tier only builds the project's image.
 * Exits 0 without doing anything where podman cannot run.
 */
import { engineProblem, openEngine } from "./engine.ts";
import { ensureBaseImages } from "./images.ts";
import { engineDir } from "./topology.ts";

const started = Date.now();
const log = (line: string): void => console.log(`[image:bases] ${((Date.now() - started) / 1000).toFixed(0)}s ${line}`);

const problem = await engineProblem();
if (problem !== undefined) {
  log(`nothing made: ${problem}`);
} else {
  await ensureBaseImages(openEngine(engineDir()), log);
  log("base images ready");
}
