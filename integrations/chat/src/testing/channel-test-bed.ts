import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ChatService, type ChatServiceOptions } from '@assistant/chat';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue, type TaskQueue } from '@assistant/queue';
import type { ListenerContext, Secret } from '@assistant/sdk';
import { afterEach, beforeEach, expect } from 'vitest';

export interface ChannelTestBedOptions<Platform extends { close(): Promise<void> }> {
  /** The start of the temporary directory's name, e.g. `assistant-discord-`. */
  prefix: string;
  /** Starts the platform's local fake for one test (a free port, nothing shared with another test). */
  start(): Promise<Platform>;
  /** The credentials no log line may hold: checked after every test, once its listeners have stopped. */
  secrets(platform: Platform): readonly string[];
}

/** A listener the bed runs: stopped after the test unless the test stops it first. */
export interface RunningListener {
  /** Aborts the listener and waits until it has returned. */
  stop(): Promise<void>;
}

/** What {@link ChannelTestBed.run} hands a listener: aborted when it is stopped. */
export interface ListenerRun {
  signal: AbortSignal;
  logger: ListenerContext['logger'];
  dataDir: string;
}

/** What one test of a channel's listener runs in; every getter answers the current test's own. */
export interface ChannelTestBed<Platform> {
  /** The test's temporary directory; the data directory is `<root>/data`. */
  readonly root: string;
  /** The file task queue under `<root>/data/queue`. */
  readonly queue: TaskQueue;
  /** The platform's local fake, started for this test. */
  readonly platform: Platform;
  /** The lines {@link logger} wrote in this test, each as `<level> <message>`. */
  readonly logs: string[];
  /** A listener's logger that writes into {@link logs}. */
  readonly logger: ListenerContext['logger'];
  /** A chat service on the test's data directory and queue (with the inbox caps given, if any). */
  chatService(options?: Pick<ChatServiceOptions, 'maxPending' | 'maxTextBytes'>): ChatService;
  /** A configured secret as the config loader hands it to a listener. */
  secret(name: string, value: string): Secret;
  /**
   * Runs a listener until the returned handle stops it or the test ends, whichever comes first; `listen` gets its
   * signal, the bed's logger and the test's data directory (`<root>/data`).
   */
  run(listen: (context: ListenerRun) => Promise<void>): RunningListener;
}

/**
 * The set-up every channel listener test shares, its hooks registered where it is called (a file's top level or a
 * `describe`): before each test a temporary directory, a file task queue in it and the platform's fake; after each,
 * in this order, the listeners stopped, the secrets checked absent from the logs, the fake, the queue and the
 * directory closed and removed (each even when a step before it failed).
 */
export function channelTestBed<Platform extends { close(): Promise<void> }>(
  options: ChannelTestBedOptions<Platform>,
): ChannelTestBed<Platform> {
  let root: string | undefined;
  let queue: TaskQueue | undefined;
  let platform: Platform | undefined;
  let logs: string[] = [];
  const running: { controller: AbortController; done: Promise<void> }[] = [];

  beforeEach(async () => {
    logs = [];
    root = await mkdtemp(path.join(os.tmpdir(), options.prefix));
    queue = await openFileTaskQueue({ directory: path.join(root, 'data', 'queue') });
    platform = await options.start();
  });

  afterEach(async () => {
    try {
      for (const listener of running.splice(0)) {
        listener.controller.abort();
        await listener.done;
      }
      // The credentials are in no log line, whatever the test did.
      if (platform) {
        const secrets = options.secrets(platform);
        expect(logs.filter((line) => secrets.some((value) => line.includes(value)))).toEqual([]);
      }
    } finally {
      try {
        await platform?.close();
      } finally {
        try {
          await queue?.close();
        } finally {
          if (root) await rm(root, { recursive: true, force: true });
          root = undefined;
          queue = undefined;
          platform = undefined;
        }
      }
    }
  });

  /** The current test's value; read outside a test (or before its set-up ran) it is a mistake in the test. */
  function current<T>(value: T | undefined, name: string): T {
    if (value === undefined) throw new Error(`the channel test bed's \`${name}\` is only there during a test`);
    return value;
  }

  const logger = {
    info: (message: string) => logs.push(`info ${message}`),
    warn: (message: string) => logs.push(`warn ${message}`),
    error: (message: string) => logs.push(`error ${message}`),
    debug: (message: string) => logs.push(`debug ${message}`),
  } as unknown as ListenerContext['logger'];

  return {
    get root() {
      return current(root, 'root');
    },
    get queue() {
      return current(queue, 'queue');
    },
    get platform() {
      return current(platform, 'platform');
    },
    get logs() {
      return logs;
    },
    logger,
    chatService(caps = {}) {
      const directory = current(root, 'root');
      return new ChatService({
        notes: new FileNoteStore({ root: path.join(directory, 'data', 'notes') }),
        dataDir: path.join(directory, 'data'),
        controlRoot: path.join(directory, 'data', 'control'),
        queue: current(queue, 'queue'),
        ...caps,
      });
    },
    secret: (name, value) => testSecret(name, value),
    run(listen) {
      const controller = new AbortController();
      const done = listen({ signal: controller.signal, logger, dataDir: path.join(current(root, 'root'), 'data') });
      const entry = { controller, done };
      running.push(entry);
      return {
        stop: async () => {
          controller.abort();
          await done;
          const at = running.indexOf(entry);
          if (at >= 0) running.splice(at, 1);
        },
      };
    },
  };
}

/** A configured secret as the config loader hands it to a listener (`isSet` when the value is not empty). */
export function testSecret(name: string, value: string): Secret {
  return { name, isSet: value !== '', reveal: () => value } as unknown as Secret;
}

/** How long {@link until} waits: generous, for a loaded 2-core machine. */
const waitMs = 15_000;

/** Waits until `check` gives something truthy and returns it; fails naming `what` after 15 s. */
export async function until<T>(check: () => T | Promise<T>, what: string): Promise<NonNullable<T>> {
  let value: T | undefined;
  await expect
    .poll(
      async () => {
        value = await check();
        return Boolean(value);
      },
      { timeout: waitMs, interval: 20, message: `timed out waiting for ${what}` },
    )
    .toBe(true);
  return value as NonNullable<T>;
}
