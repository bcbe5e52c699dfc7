/**
 * Builds the web console: one bundle (web/src/main.tsx → assets/app-HASH.js), one stylesheet
 * (assets/app-HASH.css) and an index.html that loads them; nothing inline, so the server's
 * Content-Security-Policy can forbid inline code. Deterministic: the same sources give the
 * same files. `node web/build.ts [outDir]` (default web/dist); `--if-available` makes a
 * missing esbuild (a production install without dev dependencies) a notice, not a failure.
 */
import { mkdir, rm, writeFile } from "node:fs/promises";
import { basename, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const webDir = fileURLToPath(new URL(".", import.meta.url));

/** Writes the console into `outDir` (emptied first) and returns the asset paths index.html uses. */
export async function buildConsole(outDir: string = join(webDir, "dist")): Promise<{ script: string; style: string }> {
  const esbuild = await import("esbuild");
  await rm(outDir, { recursive: true, force: true });
  const result = await esbuild.build({
    entryPoints: { app: join(webDir, "src/main.tsx") },
    bundle: true,
    format: "esm",
    target: "es2022",
    minify: true,
    sourcemap: false,
    legalComments: "none",
    jsx: "automatic",
    jsxImportSource: "preact",
    outdir: outDir,
    entryNames: "assets/[name]-[hash]",
    assetNames: "assets/[name]-[hash]",
    metafile: true,
    logLevel: "warning",
    define: { "process.env.NODE_ENV": '"production"' },
  });
  const outputs = Object.keys(result.metafile.outputs).map((file) => relative(outDir, resolve(file)).split("\\").join("/"));
  const script = outputs.find((f) => f.endsWith(".js"));
  const style = outputs.find((f) => f.endsWith(".css"));
  if (!script || !style) throw new Error(`console build produced no script or stylesheet: ${outputs.join(", ")}`);
  await mkdir(outDir, { recursive: true });
  await writeFile(join(outDir, "index.html"), indexHtml(script, style));
  return { script, style };
}

const indexHtml = (script: string, style: string): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>roz console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/${style}">
<script type="module" src="/${script}"></script>
</head>
<body>
<noscript>The roz console needs JavaScript.</noscript>
<div id="app"></div>
</body>
</html>
`;

if (process.argv[1] && basename(process.argv[1]) === "build.ts" && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const ifAvailable = args.includes("--if-available");
  const outDir = args.find((a) => !a.startsWith("--"));
  try {
    await import("esbuild");
  } catch {
    if (!ifAvailable) throw new Error("esbuild is not installed: run npm ci (dev dependencies included)");
    console.log("web console not built: esbuild is not installed (dev dependencies omitted)");
    process.exit(0);
  }
  const { script } = await buildConsole(outDir ? resolve(outDir) : undefined);
  console.log(`web console built: ${script}`);
}
