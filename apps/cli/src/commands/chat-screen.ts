import readline from 'node:readline';
import type { TextOutput } from '../cli-context.ts';

/**
 * Where `assistant chat` writes: plain text when piped, and in a terminal around the prompt, so that what the owner
 * types and what streams in never mix (as any REPL with output that arrives on its own does).
 */
export interface ChatScreen {
  /** Text as it streams in (a reply's tokens): it may end mid-line, and the next `stream` goes on from there. */
  stream(text: string): void;
  /** Whole lines: the streamed line, if one is unfinished, is ended first. */
  line(text: string): void;
  /** Ends the streamed line, if one is unfinished. */
  endLine(): void;
}

/** Output that is not a terminal: written as it comes. */
export function plainScreen(out: TextOutput): ChatScreen {
  let midLine = false;
  return {
    stream(text) {
      // Piped in, but shown on a terminal: a reply still gets no control characters through.
      const shown = out.isTTY ? terminalSafe(text) : text;
      if (shown === '') return;
      out.write(shown);
      midLine = !shown.endsWith('\n');
    },
    line(text) {
      out.write(`${midLine ? '\n' : ''}${text}\n`);
      midLine = false;
    },
    endLine() {
      if (midLine) out.write('\n');
      midLine = false;
    },
  };
}

/**
 * A terminal with readline's prompt on the last line. Everything else goes above it: each write erases the prompt
 * (and the unfinished streamed line above it), writes, and draws the prompt again with what was typed and the cursor
 * where they were. Readline keeps its own idea of where the prompt starts (the cursor's row in it); the erase starts
 * from that row and the redraw leaves the cursor on the same row of the prompt, so readline's editing stays right.
 */
export class TerminalScreen implements ChatScreen {
  readonly #out: TextOutput & NodeJS.WritableStream;
  #prompt: readline.Interface | undefined;
  /** The streamed line not yet ended, as shown right above the prompt. */
  #partial = '';

  constructor(out: TextOutput) {
    this.#out = out as TextOutput & NodeJS.WritableStream;
  }

  /** From now on the prompt of `rl` is on screen (until `detach`): output goes above it. */
  attach(rl: readline.Interface): void {
    this.#prompt = rl;
    this.#out.on?.('resize', this.#resized);
  }

  detach(): void {
    this.#prompt = undefined;
    this.#out.off?.('resize', this.#resized);
  }

  /** The terminal reflowed the unfinished row: what streams next starts a row of its own, below it. */
  readonly #resized = () => {
    this.#partial = '';
  };

  /**
   * Enter was pressed: readline left the typed line on screen and went to the next row, so the unfinished streamed
   * line is no longer right above the cursor. What streams next goes on below the typed line.
   */
  entered(): void {
    this.#partial = '';
  }

  stream(text: string): void {
    const clean = terminalSafe(text);
    if (clean !== '') this.#write(clean);
  }

  line(text: string): void {
    this.#write(`${this.#partial === '' ? '' : '\n'}${text}\n`);
  }

  endLine(): void {
    if (this.#partial !== '') this.#write('\n');
  }

  #write(text: string): void {
    const rl = this.#prompt;
    const out = this.#out;
    const shown = this.#partial + text;
    // Only the last row of the unfinished line is kept to rewrite: the rows above it are finished whatever comes, and
    // moving up over one row stays right however long the line grows (even past the height of the screen).
    const partial = lastRow(shown.slice(shown.lastIndexOf('\n') + 1), this.#columns());
    if (!rl) {
      out.write(text);
      this.#partial = partial;
      return;
    }
    const cursorRow = rl.getCursorPos().rows;
    readline.moveCursor(out, 0, -(cursorRow + (this.#partial === '' ? 0 : 1)));
    readline.cursorTo(out, 0);
    readline.clearScreenDown(out);
    out.write(shown);
    if (partial !== '') out.write('\n');
    this.#partial = partial;
    // Readline redraws from `cursorRow` rows above the cursor: these blank rows are what it moves up over and clears.
    out.write('\n'.repeat(cursorRow));
    rl.prompt(true);
  }

  #columns(): number {
    const columns = (this.#out as { columns?: number }).columns;
    return columns !== undefined && columns > 0 ? columns : 80;
  }
}

/**
 * Streamed text as a terminal should get it: a tab as spaces, and no control characters but the line break, so a
 * reply (the model's text, quoting a mail) cannot move the cursor, clear the screen or retitle the terminal.
 */
export function terminalSafe(text: string): string {
  return (
    text
      .replaceAll('\t', '    ')
      .replaceAll('\r\n', '\n')
      // biome-ignore lint/suspicious/noControlCharactersInRegex: these are what it removes
      .replace(/\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|[\x00-\x09\x0b-\x1f\x7f-\x9f]/g, '')
  );
}

/** The last row `text` (one line, no line break) takes on a terminal `columns` wide: all of it when it fits. */
export function lastRow(text: string, columns: number): string {
  let row = '';
  let width = 0;
  for (const character of text) {
    const characterWidth = displayWidth(character);
    // A character that does not fit on the row starts the next one, as the terminal wraps it.
    if (width + characterWidth > columns && width > 0) {
      row = '';
      width = 0;
    }
    row += character;
    width += characterWidth;
  }
  return row;
}

/** Columns `text` takes: escape sequences none, combining marks none, wide (East Asian, emoji) characters two. */
export function displayWidth(text: string): number {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: escape sequences take no columns
  const visible = text.replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, '');
  let width = 0;
  for (const character of visible) {
    if (/\p{Mark}|\u200b|\u200d|\ufe0f/u.test(character)) continue;
    width += wide.test(character) ? 2 : 1;
  }
  return width;
}

const wide =
  /[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6\u{1f300}-\u{1f64f}\u{1f900}-\u{1f9ff}\u{20000}-\u{3fffd}]/u;
