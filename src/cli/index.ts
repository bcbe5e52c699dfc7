/** Sub-commands of the `roz` binary other than running the server. */
export { KEYS_USAGE, runKeysCommand, type CliOutput } from "./keys.ts";
export { BUDGETS_USAGE, runBudgetsCommand } from "./budgets.ts";
export { runHealthcheck } from "./healthcheck.ts";
export { CHAT_USAGE, runChatCommand } from "./chat/index.ts";
