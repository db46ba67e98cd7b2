// What a handler can reach through its context: its own instance's settings and LLM profile, no other secret.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runWorker } from './run-worker.ts';
import { loadTestRuntime } from './testing/load-test-runtime.ts';
import { runUntilIdle } from './testing/run-until-idle.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-peek-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * A hostile handler: it walks every object reachable from its context (own and symbol keys, getters, prototypes,
 * maps and sets), reveals every Secret it meets, and also asks for another LLM profile. It returns the labels of the
 * planted secrets it found (the labels, not the values, so scrubbing cannot hide a leak from the test).
 */
const peekHandler = `
const planted = /s3cr3t-([a-z]+)-XYZW1234/g;
export async function peek(context) {
  const found = new Set();
  const seen = new WeakSet();
  const pending = [];
  const look = (value) => {
    if (typeof value === 'string') {
      for (const match of value.matchAll(planted)) found.add(match[1]);
      return;
    }
    if ((typeof value === 'object' && value !== null) || typeof value === 'function') {
      if (!seen.has(value)) {
        seen.add(value);
        pending.push(value);
      }
    }
  };
  let otherProfile = 'refused';
  try {
    look(context.llm('other'));
    otherProfile = 'given';
  } catch {}
  look(context.llm());
  look(context);
  let visited = 0;
  for (; visited < pending.length && visited < 300000; visited++) {
    const value = pending[visited];
    try {
      if (typeof value.reveal === 'function') look(value.reveal());
    } catch {}
    try {
      if (value instanceof Map) for (const [key, item] of value) { look(key); look(item); }
      if (value instanceof Set) for (const item of value) look(item);
    } catch {}
    let keys = [];
    try { keys = Reflect.ownKeys(value); } catch {}
    for (const key of keys) {
      try {
        const descriptor = Object.getOwnPropertyDescriptor(value, key);
        if (!descriptor) continue;
        look('value' in descriptor ? descriptor.value : Reflect.get(value, key));
      } catch {}
    }
    try { look(Object.getPrototypeOf(value)); } catch {}
  }
  return { found: [...found].sort(), other_profile: otherProfile, visited };
}
`;

describe('the handler context', () => {
  it('hole 9: a handler sees only its own instance settings and LLM profile', async () => {
    await mkdir(path.join(dir, 'custom', 'peek', 'src'), { recursive: true });
    await writeFile(
      path.join(dir, 'custom', 'peek', 'manifest.yaml'),
      'domain: peek\nconfig:\n  password: {type: secret, required: true}\ntasks:\n  look: {handler: ./src/peek.ts#peek}\n',
    );
    await writeFile(path.join(dir, 'custom', 'peek', 'src', 'peek.ts'), peekHandler);
    await writeFile(
      path.join(dir, 'secrets.yaml'),
      [
        'mine_password: s3cr3t-mine-XYZW1234',
        'theirs_password: s3cr3t-theirs-XYZW1234',
        'default_token: s3cr3t-default-XYZW1234',
        'other_token: s3cr3t-other-XYZW1234',
        'server_token: s3cr3t-server-XYZW1234',
        '',
      ].join('\n'),
    );
    await writeFile(
      path.join(dir, 'config.yaml'),
      `data_dir: ./data
worker: {poll_interval: 50ms}
integration_dirs: [./custom]
server: {token: !secret server_token}
llms:
  default: {base_url: "http://127.0.0.1:9/v1", model: m, token: !secret default_token}
  other: {base_url: "http://127.0.0.1:9/v1", model: m, token: !secret other_token}
integrations:
  - {type: peek, name: mine, password: !secret mine_password}
  - {type: peek, name: theirs, password: !secret theirs_password, llm: other}
`,
    );
    const { config, registry, queue } = await loadTestRuntime(dir);
    const enqueued = await queue.enqueue({ type: 'peek.look', source: 'cli', integration: 'mine' });
    const logger = pino({ level: 'silent' });
    await runWorker({ config, registry, logger, signal: new AbortController().signal, exitWhenIdle: true });
    const state = await queue.get(enqueued.status === 'enqueued' ? enqueued.task.id : '');
    expect(state?.state).toBe('done');
    const result = state?.task?.result as { found: string[]; other_profile: string; visited: number };
    // Its own password is on the context (the walk works); the default profile's token stays inside its model.
    expect(result.found).toEqual(['mine']);
    expect(result.other_profile).toBe('refused');
    expect(result.visited).toBeGreaterThan(50);
  });

  it('gives queue housekeeping and config.yaml scripts only to the builtin integrations that need them', async () => {
    await mkdir(path.join(dir, 'custom', 'nosy', 'src'), { recursive: true });
    await writeFile(
      path.join(dir, 'custom', 'nosy', 'manifest.yaml'),
      'domain: nosy\ntasks:\n  look: {handler: ./src/nosy.ts#look}\n',
    );
    await writeFile(
      path.join(dir, 'custom', 'nosy', 'src', 'nosy.ts'),
      'export async function look(context) { return { maintenance: "queueMaintenance" in context, scripts: "scripts" in context, queue: "queue" in context }; }\n',
    );
    await writeFile(
      path.join(dir, 'config.yaml'),
      'data_dir: ./data\nworker: {poll_interval: 50ms}\nintegration_dirs: [./custom]\nintegrations:\n  - {type: nosy, name: n}\n',
    );
    const { config, registry, queue } = await loadTestRuntime(dir);
    const enqueued = await queue.enqueue({ type: 'nosy.look', source: 'cli', integration: 'n' });
    await runUntilIdle({ config, registry });
    const state = await queue.get(enqueued.status === 'enqueued' ? enqueued.task.id : '');
    expect(state?.task?.result).toEqual({ maintenance: false, scripts: false, queue: false });
  });
});
