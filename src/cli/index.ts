/** Sub-commands of the `roz` binary other than running the server. */
export { commands, helpText, runCommand, type Command } from "./commands.ts";
export type { CliOutput } from "./keys.ts";
