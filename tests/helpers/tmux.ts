import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The one command that makes the terminal tests runnable; CI's `.ci/run` installs the same package. */
const tmuxInstallCommand = 'apt-get install -y --no-install-recommends tmux';

export interface TerminalSessionOptions {
  /** The program and its arguments, run in the terminal (no shell between). */
  command: readonly string[];
  cwd: string;
  /** Added to an environment cleared of ASSISTANT_* variables, so the caller's shell cannot leak in. */
  env?: NodeJS.ProcessEnv;
  /** @default 100 */
  columns?: number;
  /** @default 30 */
  rows?: number;
}

/**
 * A program in a real terminal: a private tmux server (its own socket, no user config) runs it in a pseudo-terminal
 * of a fixed size. Keys go in as a person types them; `screen()` is what the terminal shows, as tmux rendered it
 * (cursor movements and erasures applied), with its scrollback.
 */
export interface TerminalSession extends AsyncDisposable {
  /** Types `text` literally (no key names), as keystrokes. */
  type(text: string): Promise<void>;
  /** Presses keys by tmux name: `Enter`, `C-c`, `C-d`. */
  press(...keys: string[]): Promise<void>;
  /** The rendered screen and its scrollback, one string per line, wrapped lines joined, trailing blanks trimmed. */
  screen(): Promise<string[]>;
  /** The line the cursor is on, as shown. */
  cursorLine(): Promise<string>;
  /** Whether the program has exited (the pane stays, so its last screen can still be read). */
  exited(): Promise<boolean>;
}

/** Starts `command` in a new terminal; throws, never skips, when tmux is not installed. */
export async function startTerminal(options: TerminalSessionOptions): Promise<TerminalSession> {
  const tmux = await findTmux();
  const directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-tmux-'));
  const socket = path.join(directory, 'socket');
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('ASSISTANT_')));
  // Not inside the caller's own tmux (TMUX set) even when the tests run in one.
  const { TMUX: _outer, ...outside } = env;
  const tmuxEnv: NodeJS.ProcessEnv = { ...outside, ...options.env, TERM: 'xterm-256color' };
  const call = async (...args: string[]) =>
    (await run(tmux, ['-S', socket, '-f', '/dev/null', ...args], { env: tmuxEnv, cwd: options.cwd })).stdout;
  await call(
    'new-session',
    '-d',
    '-s',
    'test',
    '-x',
    String(options.columns ?? 100),
    '-y',
    String(options.rows ?? 30),
    '-c',
    options.cwd,
    ...options.command,
  );
  // Keep the pane (and what it shows) after the program exits; nothing else of tmux on the screen.
  await call('set-option', '-t', 'test', 'remain-on-exit', 'on');
  await call('set-option', '-t', 'test', 'status', 'off');
  const session: TerminalSession = {
    async type(text) {
      await call('send-keys', '-t', 'test', '-l', text);
    },
    async press(...keys) {
      await call('send-keys', '-t', 'test', ...keys);
    },
    async screen() {
      const text = await call('capture-pane', '-t', 'test', '-p', '-J', '-S', '-');
      return text.split('\n').map((line) => line.trimEnd());
    },
    async cursorLine() {
      const [row = '0', history = '0'] = (
        await call('display-message', '-t', 'test', '-p', '#{cursor_y} #{history_size}')
      )
        .trim()
        .split(' ');
      const lines = (await call('capture-pane', '-t', 'test', '-p', '-S', '-')).split('\n');
      return (lines[Number(history) + Number(row)] ?? '').trimEnd();
    },
    async exited() {
      return (await call('display-message', '-t', 'test', '-p', '#{pane_dead}')).trim() === '1';
    },
    async [Symbol.asyncDispose]() {
      await call('kill-server').catch(() => {});
      await rm(directory, { recursive: true, force: true });
    },
  };
  return session;
}

async function findTmux(): Promise<string> {
  const directories = [...(process.env.PATH ?? '').split(path.delimiter), '/usr/bin', '/usr/local/bin'];
  for (const directory of directories) {
    if (directory === '') continue;
    const candidate = path.join(directory, 'tmux');
    if (
      await access(candidate, constants.X_OK).then(
        () => true,
        () => false,
      )
    ) {
      return candidate;
    }
  }
  // In CI a missing tmux is a broken machine, not a reason to skip: .ci/run installs it.
  const where =
    process.env.CI === 'true' ? ' (CI installs it in .ci/run, so this machine is not set up as CI expects)' : '';
  throw new Error(
    `tmux was not found in ${directories.join(', ')}${where}; the terminal tests run the chat in a real terminal through it. Install tmux: ${tmuxInstallCommand} (as root, after apt-get update)`,
  );
}
