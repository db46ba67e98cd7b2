// The script sandbox through the real parts: script.run tasks claimed by a real worker, with the config's own paths
// (hole 8: a deny-list sandbox that left $HOME, config.yaml and the data folder readable, and failed open).
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { formatProblem } from '@assistant/config';
import { loadRuntime } from '@assistant/integration-host';
import { installation } from '@assistant/process';
import { openFileTaskQueue } from '@assistant/queue';
import { runWorker } from '@assistant/worker';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { requireBubblewrap } from './helpers/bubblewrap.ts';
import { repoRoot } from './helpers/node-process.ts';

let base: string;

beforeEach(async () => {
  // Outside /tmp, where an owner's config folder really lives: the sandbox's private /tmp would hide a config folder
  // under /tmp by accident and prove nothing.
  base = await mkdtemp('/var/tmp/assistant-script-sandbox-');
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

/** Loads `config` from `base`, runs a worker until the queue is idle, and returns the script.run task's record. */
async function runOnce(options: { config: string; script: string; inputs?: Record<string, string>; bwrap?: string }) {
  await writeFile(path.join(base, 'config.yaml'), options.config);
  const runtime = await loadRuntime({ installation, configPath: path.join(base, 'config.yaml'), cwd: base });
  const queue = await openFileTaskQueue({ directory: runtime.config.paths.queue, settings: runtime.config.queue });
  const enqueued = await queue.enqueue({
    type: 'script.run',
    source: 'cli',
    payload: { script: options.script, inputs: options.inputs ?? {} },
  });
  if (enqueued.status !== 'enqueued') throw new Error(`Expected the task to be enqueued, got ${enqueued.status}`);
  const lines: string[] = [];
  await runWorker({
    config: runtime.config,
    registry: runtime.registry,
    logger: pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line).msg) }),
    signal: new AbortController().signal,
    exitWhenIdle: true,
    ...(options.bwrap === undefined ? {} : { bubblewrapPath: options.bwrap }),
  });
  const record = await queue.get(enqueued.task.id);
  return { task: record?.task, state: record?.state, log: lines, warnings: runtime.warnings.map(formatProblem) };
}

describe('scripts through the worker', () => {
  it("hole 8: a script cannot read $HOME, config.yaml, the data dir or another script's folder", async () => {
    await requireBubblewrap();
    const homeFile = path.join(homedir(), `.assistant-hole-8-${randomBytes(6).toString('hex')}`);
    try {
      const planted = {
        home: homeFile,
        config: path.join(base, 'config.yaml'),
        secrets: path.join(base, 'secrets.yaml'),
        llmCache: path.join(base, 'llm-cache', 'recording.json'),
        notes: path.join(base, 'data', 'notes', 'private.md'),
        queue: path.join(base, 'data', 'queue', 'planted.yaml'),
        otherScript: path.join(base, 'data', 'scripts', 'other', 'state.json'),
        checkout: path.join(repoRoot, 'package.json'),
      };
      for (const [name, file] of Object.entries(planted)) {
        if (name === 'config' || name === 'checkout') continue;
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, name === 'secrets' ? 'api_token: hunter2\n' : `planted ${name}\n`, { mode: 0o600 });
      }
      await mkdir(path.join(base, 'scripts'), { recursive: true });
      await writeFile(
        path.join(base, 'scripts', 'reader.mjs'),
        `import { readFileSync } from 'node:fs';
        const { setResult } = await import(process.env.ASSISTANT_HELPERS);
        const seen = {};
        for (const [name, file] of Object.entries(JSON.parse(process.env.ASSISTANT_INPUT_FILES))) {
          try { readFileSync(file); seen[name] = 'read'; } catch (error) { seen[name] = error.code; }
        }
        setResult(seen);`,
      );
      const config = `data_dir: ./data
scripts:
  reader:
    node: ./scripts/reader.mjs
    inputs: [files]
    reversible: true
`;
      const files = JSON.stringify({ ...planted, own: path.join(base, 'scripts', 'reader.mjs') });
      const { task, state, log } = await runOnce({ config, script: 'reader', inputs: { files } });
      expect(state, task?.error?.message).toBe('done');
      expect(task?.result).toEqual(
        expect.objectContaining({
          sandbox: 'bubblewrap',
          result: {
            home: 'ENOENT',
            config: 'ENOENT',
            secrets: 'ENOENT',
            llmCache: 'ENOENT',
            notes: 'ENOENT',
            queue: 'ENOENT',
            otherScript: 'ENOENT',
            checkout: 'ENOENT',
            own: 'read',
          },
        }),
      );
      expect(log).toContain(
        'scripts run sandboxed by bubblewrap (they see only system files, their own file and work folder)',
      );
    } finally {
      await rm(homeFile, { force: true });
    }
  });

  it('refuses scripts when bubblewrap does not work, says so at start, and runs them with sandbox: none', async () => {
    const missing = path.join(base, 'no-such-bwrap');
    const scripts = `scripts:
  touch:
    shell: echo ran > ran.txt
    reversible: true
`;
    const ran = path.join(base, 'data', 'scripts', 'touch', 'ran.txt');

    const refused = await runOnce({ config: `data_dir: ./data\n${scripts}`, script: 'touch', bwrap: missing });
    expect(refused.state).toBe('failed');
    // Unrecoverable: one attempt, not three, since nothing changes until the machine or the config does.
    expect(refused.task?.attempts).toBe(1);
    expect(refused.task?.error?.message).toBe(
      `script touch was not run: it needs the bubblewrap sandbox, and the bubblewrap executable \`${missing}\` was ` +
        'not found. Install bubblewrap (apt-get install bubblewrap) and restart Assistant, or, knowing that scripts ' +
        'then read and write whatever Assistant can, set `worker.sandbox: none` in config.yaml',
    );
    expect(refused.log).toContain(
      `scripts will not run: they need the bubblewrap sandbox, and the bubblewrap executable \`${missing}\` was not ` +
        'found; install bubblewrap (apt-get install bubblewrap) and restart, or accept unsandboxed scripts with ' +
        '`worker.sandbox: none`',
    );
    expect(existsSync(ran)).toBe(false);

    const unsandboxed = await runOnce({
      config: `data_dir: ./data\nworker:\n  sandbox: none\n${scripts}`,
      script: 'touch',
      bwrap: missing,
    });
    expect(unsandboxed.state, unsandboxed.task?.error?.message).toBe('done');
    expect(unsandboxed.task?.result).toMatchObject({ sandbox: 'none', exit_code: 0 });
    expect(existsSync(ran)).toBe(true);
    expect(unsandboxed.log).toContain(
      'scripts run unsandboxed (worker.sandbox: none): they can read and write whatever Assistant can, secrets.yaml ' +
        'and the data folder included; install bubblewrap (apt-get install bubblewrap) and remove `sandbox: none`',
    );
    expect(unsandboxed.warnings).toEqual([
      expect.stringMatching(/^config\.yaml:3:12: worker\.sandbox: `sandbox: none`/),
    ]);
  });

  it('does not try bubblewrap at start when config.yaml has no scripts', async () => {
    // A bwrap that leaves a mark when it is run.
    const marker = path.join(base, 'bwrap-ran');
    const bwrap = path.join(base, 'bwrap');
    await writeFile(bwrap, `#!/bin/sh\ntouch '${marker}'\nexit 0\n`);
    await chmod(bwrap, 0o755);
    // The script.run task for a script config.yaml does not have fails (refused) without any trial either.
    const { state, log } = await runOnce({ config: 'data_dir: ./data\n', script: 'touch', bwrap });
    expect(state).toBe('failed');
    expect(log).toContain(
      'no scripts are configured (no `scripts:` in config.yaml), so the script sandbox was not tried',
    );
    expect(existsSync(marker)).toBe(false);
  });
});
