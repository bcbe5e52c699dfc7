import { readFileSync } from "node:fs";

/** The server version, from package.json (read once when the app is built). */
export const SERVER_VERSION: string = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;
