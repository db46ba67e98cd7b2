import { type ChildProcess, spawn } from 'node:child_process';
import { deserializeMessage, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { BoundedLineReader, type OversizedLine } from './bounded-line-reader.ts';
import { answeredIdOf, requestIdsOf, responseTooLargeMessage, sniffResponseId } from './response-too-large.ts';

/** Options of {@link ProcessGroupStdioTransport}. */
export interface ProcessGroupStdioTransportOptions {
  command: string;
  args: readonly string[];
  /** The child's whole environment: nothing is inherited beyond what is given here. */
  env: Record<string, string>;
  cwd?: string;
  /** Each line the server writes to stderr (servers log there). */
  onStderrLine?: (line: string) => void;
  /** The largest message (one line) read from the server; a larger one fails the request it answers. */
  maxMessageBytes: number;
}

/** How long a server gets to exit after its stdin closes, and again after SIGTERM, before SIGKILL. */
const exitGraceMs = 2_000;
/** The stderr lines kept to explain a crash. */
const keptStderrLines = 20;
/** The most characters kept of one stderr line. */
const maxStderrLineChars = 2_000;

/**
 * The MCP stdio transport, with two differences from the SDK's StdioClientTransport. The server runs in its own
 * process group, and closing it (or its crash) signals the whole group: a server started through `npx`, a shell
 * script or `uv run` is a tree of processes; killing only the direct child would orphan the one doing the work. And
 * its reading is bounded: a message past `maxMessageBytes` is dropped as it arrives (never held whole, never thrown
 * out of the stream's listener) and the request it answers fails with an error the client reads as
 * MCP_RESPONSE_TOO_LARGE; the server stays up and its next answers are read as usual.
 */
export class ProcessGroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly #options: ProcessGroupStdioTransportOptions;
  readonly #lines: BoundedLineReader;
  /** Requests sent and not yet answered, to fail when an answer is dropped. */
  readonly #waiting = new Set<RequestId>();
  readonly #stderrLines: string[] = [];
  #child: ChildProcess | undefined;
  #exited: Promise<void> | undefined;
  #closing = false;

  constructor(options: ProcessGroupStdioTransportOptions) {
    this.#options = options;
    this.#lines = new BoundedLineReader({ maxLineBytes: options.maxMessageBytes });
  }

  /** The server's process id (also its process group's id) once started. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** The last lines the server wrote to stderr, to say why it stopped. */
  get recentStderr(): string {
    return this.#stderrLines.join('\n');
  }

  start(): Promise<void> {
    if (this.#child) throw new Error('the MCP stdio transport was already started');
    return new Promise((resolve, reject) => {
      const child = spawn(this.#options.command, [...this.#options.args], {
        env: this.#options.env,
        ...(this.#options.cwd === undefined ? {} : { cwd: this.#options.cwd }),
        stdio: ['pipe', 'pipe', 'pipe'],
        // Its own process group (a new session on POSIX), so the group can be signalled as one.
        detached: process.platform !== 'win32',
        windowsHide: true,
      });
      this.#child = child;
      this.#exited = new Promise((resolveExit) => child.once('close', () => resolveExit()));
      child.once('error', (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.once('spawn', () => resolve());
      child.once('close', () => {
        // A crash (or an exit of its own) can leave the server's own children behind; a close already did this.
        if (!this.#closing) this.#signalGroup('SIGTERM');
        this.onclose?.();
      });
      child.stdin?.on('error', (error) => this.onerror?.(error));
      child.stdout?.on('data', (chunk: Buffer) => this.#read(chunk));
      let partial = '';
      child.stderr?.setEncoding('utf8');
      child.stderr?.on('data', (text: string) => {
        const lines = (partial + text).split('\n');
        // A line without end would grow without bound (and be split again on every chunk): its start is enough.
        partial = (lines.pop() ?? '').slice(0, maxStderrLineChars);
        for (const line of lines) this.#keepStderr(line.slice(0, maxStderrLineChars));
      });
      child.stderr?.on('end', () => {
        if (partial !== '') this.#keepStderr(partial);
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve, reject) => {
      const stdin = this.#child?.stdin;
      if (!stdin || stdin.destroyed || this.#closing) {
        reject(new Error('the MCP server is not running'));
        return;
      }
      for (const id of requestIdsOf(message)) this.#waiting.add(id);
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  /**
   * Stops the server: closes its stdin (the protocol's way to say goodbye), then SIGTERM to its process group after
   * two seconds, then SIGKILL after two more. Whatever is left of the group afterwards gets SIGKILL too.
   */
  async close(): Promise<void> {
    const child = this.#child;
    if (!child || this.#closing) {
      await this.#exited;
      return;
    }
    this.#closing = true;
    const exited = this.#exited ?? Promise.resolve();
    if (child.exitCode === null && child.signalCode === null) {
      child.stdin?.end();
      if (!(await settlesWithin(exited, exitGraceMs))) {
        this.#signalGroup('SIGTERM');
        if (!(await settlesWithin(exited, exitGraceMs))) {
          this.#signalGroup('SIGKILL');
          await exited;
        }
      }
    }
    this.#signalGroup('SIGKILL');
    this.#lines.clear();
    this.#waiting.clear();
  }

  /**
   * The `data` listener: whatever a line holds, nothing is thrown from here (an exception in a stream listener is
   * uncaught and ends the process). A line that is not a message is told to `onerror`, as the SDK does.
   */
  #read(chunk: Buffer): void {
    for (const line of this.#lines.push(chunk)) {
      if (line.type === 'oversized') {
        this.#failWaitingFor(line);
        continue;
      }
      if (line.text.trim() === '') continue;
      let message: JSONRPCMessage;
      try {
        message = deserializeMessage(line.text);
      } catch (error) {
        this.onerror?.(error instanceof Error ? error : new Error(String(error)));
        continue;
      }
      const answered = answeredIdOf(message);
      if (answered !== undefined) this.#waiting.delete(answered);
      this.#deliver(message);
    }
  }

  /**
   * A dropped line answered the request named at one of its ends, or, when neither end names one, any of those
   * waiting: each fails rather than waiting out its timeout. A line naming an id nothing waits for (a request of the
   * server's own) fails nothing.
   */
  #failWaitingFor(line: OversizedLine): void {
    const sniffed = sniffResponseId(line.head, line.tail);
    const ids = sniffed === undefined ? [...this.#waiting] : this.#waiting.has(sniffed) ? [sniffed] : [];
    for (const id of ids) {
      this.#waiting.delete(id);
      const details = { limitBytes: this.#options.maxMessageBytes, receivedBytes: line.bytes, cutShort: false };
      this.#deliver(responseTooLargeMessage(id, details));
    }
  }

  #deliver(message: JSONRPCMessage): void {
    try {
      this.onmessage?.(message);
    } catch (error) {
      this.onerror?.(error instanceof Error ? error : new Error(String(error)));
    }
  }

  #keepStderr(line: string): void {
    this.#stderrLines.push(line);
    if (this.#stderrLines.length > keptStderrLines) this.#stderrLines.shift();
    this.#options.onStderrLine?.(line);
  }

  /** Signals the server's process group; a group that is already gone is fine. */
  #signalGroup(signal: NodeJS.Signals): void {
    const pid = this.#child?.pid;
    if (pid === undefined) return;
    try {
      if (process.platform === 'win32') this.#child?.kill(signal);
      else process.kill(-pid, signal);
    } catch {
      // ESRCH: nothing of the group is left.
    }
  }
}

async function settlesWithin(promise: Promise<void>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([promise.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
