import type { ToolCategory } from "./types.ts";

/**
 * The category a tool has when permission rules are matched (session-behaviour.md §4): an
 * unspecified category counts as `physical`, as in v0.2, so that leaving the category out
 * can never escape a rule written for physical tools.
 */
export function ruleCategoryOf(category: ToolCategory): Exclude<ToolCategory, "unspecified"> {
  return category === "unspecified" ? "physical" : category;
}
