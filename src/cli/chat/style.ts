/** How the chat marks kinds of output: ANSI styles at a terminal, nothing in plain text. */
export interface Style {
  /** No styles: what a style would show is said in words (e.g. `thinking:`). */
  readonly plain: boolean;
  dim(text: string): string;
  red(text: string): string;
  cyan(text: string): string;
  yellow(text: string): string;
}

/**
 * Each line gets its own start and end codes: the screen redraws an unfinished line on its
 * own, and a style left open would also colour the prompt after it.
 */
const sgr =
  (on: number, off: number) =>
  (text: string): string =>
    text
      .split("\n")
      .map((line) => (line === "" ? line : `\x1b[${on}m${line}\x1b[${off}m`))
      .join("\n");

export const ansiStyle: Style = { plain: false, dim: sgr(2, 22), red: sgr(31, 39), cyan: sgr(36, 39), yellow: sgr(33, 39) };

const same = (text: string): string => text;
export const plainStyle: Style = { plain: true, dim: same, red: same, cyan: same, yellow: same };
