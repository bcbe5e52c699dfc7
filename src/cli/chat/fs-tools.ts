import { readdir, readFile, realpath, stat } from "node:fs/promises";
import { isAbsolute, relative, resolve } from "node:path";
import type { Tools } from "@roz/client";

/** Longest file text handed to the model; the rest is cut with a note. */
const MAX_READ_CHARS = 100_000;

const pathParameter = (description: string, required: boolean) => ({
  type: "object",
  properties: { path: { type: "string", description } },
  ...(required ? { required: ["path"] } : {}),
});

/**
 * Where `path` (relative to `root`, or absolute) really is, symbolic links followed; a path
 * outside `root` needs a yes from `allow`. A missing path or a refusal throws, which the
 * library sends as a failed result.
 */
async function place(root: string, path: unknown, tool: string, allow: (question: string) => Promise<boolean>): Promise<string> {
  if (typeof path !== "string" || path === "") throw new Error(`${tool} needs a path`);
  const wanted = resolve(root, path);
  const real = await realpath(wanted).catch((err: NodeJS.ErrnoException) => {
    throw new Error(err.code === "ENOENT" ? `${path}: no such file or directory` : `${path}: ${err.message}`);
  });
  const rel = relative(await realpath(root), real);
  const inside = rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
  if (!inside && !(await allow(`${tool} ${real} is outside ${root}: allow?`))) {
    throw new Error(`${path} is outside the working folder and the user did not allow it`);
  }
  return real;
}

/**
 * `--tools fs`: `read_file` and `list_dir` on this machine, under `root` (the folder the chat
 * runs in). Both only read, so they are `pure`; a path outside `root` is asked with `allow`.
 */
export function fsTools(root: string, allow: (question: string) => Promise<boolean>): Tools {
  return {
    read_file: {
      description: "Read a text file of the user's working folder (a path relative to it, or absolute)",
      parameters: pathParameter("the file's path", true),
      category: "pure",
      run: async ({ path }: { path?: unknown }) => {
        const file = await place(root, path, "read_file", allow);
        if ((await stat(file)).isDirectory()) throw new Error(`${String(path)} is a folder: use list_dir`);
        const text = await readFile(file, "utf8");
        return text.length <= MAX_READ_CHARS ? text : `${text.slice(0, MAX_READ_CHARS)}\n[… cut: the file has ${text.length} characters]`;
      },
    },
    list_dir: {
      description: "List a folder of the user's working folder (default: the working folder itself); folders end with /",
      parameters: pathParameter("the folder's path (default .)", false),
      category: "pure",
      run: async ({ path }: { path?: unknown }) => {
        const dir = await place(root, path ?? ".", "list_dir", allow);
        if (!(await stat(dir)).isDirectory()) throw new Error(`${String(path)} is not a folder: use read_file`);
        const entries = await readdir(dir, { withFileTypes: true });
        const names = entries.map((e) => (e.isDirectory() ? `${e.name}/` : e.name)).sort();
        return names.length > 0 ? names.join("\n") : "(empty folder)";
      },
    },
  };
}
