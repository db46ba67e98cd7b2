/** Somewhere text goes: process.stdout, process.stderr, or a buffer in tests. */
export interface TextOutput {
  write(text: string): unknown;
  /** True when a person is watching (a terminal), which decides pretty logs and colour. */
  isTTY?: boolean;
}

/** What the CLI reads from and writes to, so the program can run in-process under test. */
export interface CliContext {
  stdout: TextOutput;
  stderr: TextOutput;
  env: NodeJS.ProcessEnv;
  /** Relative --config and --data paths resolve against it. */
  cwd: string;
  /** What `assistant chat` reads lines (or, with --once, the message) from. @default process.stdin */
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
}

/** The real process's streams, environment and directory. */
export function processContext(): CliContext {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    cwd: process.cwd(),
    stdin: process.stdin,
  };
}
