import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChatService } from '@assistant/chat';
import type { LoadedConfig } from '@assistant/config';
import { clearSecretValues, registerSecretValue } from '@assistant/errors';
import { IntegrationRegistry, type ListenerApprovals, listenerSpecs } from '@assistant/integration-host';
import { discoverIntegrations } from '@assistant/manifests';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { dataPaths } from './data-paths.ts';
import { type ListenerStatus, ListenerSupervisor } from './listener-supervisor.ts';

const fixture = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../tests/fixtures/integrations/inbound/stubborn',
);

async function registry(settings: Record<string, unknown> = {}): Promise<IntegrationRegistry> {
  const integrations = await discoverIntegrations({ builtinDir: path.join(fixture, 'none'), customDirs: [fixture] });
  const config = {
    integrations: [{ type: 'stubborn', name: 'mule', enabled: true, settings, platforms: {} }],
  } as unknown as LoadedConfig;
  return new IntegrationRegistry({ integrations, config });
}

async function until(supervisor: ListenerSupervisor, check: (all: ListenerStatus[]) => boolean, what: string) {
  const deadline = Date.now() + 10_000;
  while (!check(supervisor.status())) {
    if (Date.now() > deadline) throw new Error(`waited 10 s for ${what}: ${JSON.stringify(supervisor.status())}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('ListenerSupervisor', () => {
  it('restarts a listener that returns or cannot load, and stops waiting for a deaf one after the grace', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line).msg) });
    const mule = await registry();
    const supervisor = new ListenerSupervisor({
      registry: mule,
      listeners: listenerSpecs(mule).filter((spec) => !['leaky', 'nosy', 'moody'].includes(spec.name)),
      enqueue: async () => ({ status: 'enqueued', id: 'unused' }),
      logger,
      configDir: fixture,
      dataDir: fixture,
      backoff: { initialMs: 5, maxMs: 20 },
    });
    supervisor.start();
    await until(
      supervisor,
      (all) => all.filter((one) => one.id !== 'mule/deaf').every((one) => one.restarts >= 3),
      'quitter and missing to be restarted three times',
    );
    const byId = Object.fromEntries(supervisor.status().map((one) => [one.id, one]));
    expect(byId['mule/quitter']?.lastError).toBe('returned before the server stopped it');
    // The same located error as a broken stage handler's (config check reports it before anything runs).
    expect(byId['mule/missing']?.lastError).toMatch(
      /inbound\/stubborn\/manifest\.yaml:8:13: listeners\.missing\.handler: \.\/src\/stubborn\.ts exports no `notExported` \(it exports: quit, ignoreShutdown, noop\)/,
    );
    expect(byId['mule/deaf']).toMatchObject({ state: 'running', restarts: 0 });
    // The backoff doubles up to its cap.
    expect(lines).toContain(
      'listener mule/quitter stopped unexpectedly (returned before the server stopped it); restarting in 10 ms',
    );
    expect(lines).toContain(
      'listener mule/quitter stopped unexpectedly (returned before the server stopped it); restarting in 20 ms',
    );

    await supervisor.close({ graceMs: 50 });
    await supervisor.close({ graceMs: 50 });
    const states = Object.fromEntries(supervisor.status().map((one) => [one.id, one.state]));
    expect(states).toEqual({ 'mule/quitter': 'stopped', 'mule/missing': 'stopped', 'mule/deaf': 'running' });
    expect(lines.filter((line) => line.includes('did not stop within 50 ms'))).toEqual([
      'listeners mule/deaf did not stop within 50 ms of the shutdown signal; leaving them behind',
    ]);
  });

  it('shows a crash in /health on one line, without secret values or the absolute data directory', async () => {
    const password = 'correct-horse-battery';
    registerSecretValue(password);
    const dataDir = path.resolve('/srv/owner/assistant-data');
    try {
      const lines: string[] = [];
      const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line).msg) });
      const mule = await registry({ password, file: path.join(dataDir, 'mail', 'state.json') });
      const supervisor = new ListenerSupervisor({
        registry: mule,
        listeners: listenerSpecs(mule).filter((spec) => spec.name === 'leaky'),
        enqueue: async () => ({ status: 'enqueued', id: 'unused' }),
        logger,
        configDir: fixture,
        dataDir,
        scrubPaths: dataPaths({ dataDir, queueDir: path.join(dataDir, 'queue') }).scrub,
        backoff: { initialMs: 5, maxMs: 20 },
      });
      supervisor.start();
      await until(supervisor, (all) => all[0]?.lastError !== undefined, 'the leaky listener to crash');
      await supervisor.close({ graceMs: 1_000 });
      expect(supervisor.status()[0]?.lastError).toBe('login as bot:[secret] refused while reading mail/state.json');
      expect(lines.join('\n')).not.toContain(password);
    } finally {
      clearSecretValues();
    }
  });

  it('keeps what a listener reports of its source: since kept while the state lasts, the detail scrubbed', async () => {
    const password = 'correct-horse-battery';
    registerSecretValue(password);
    const dataDir = path.resolve('/srv/owner/assistant-data');
    try {
      const mule = await registry({ password, file: path.join(dataDir, 'mail', 'state.json') });
      const supervisor = new ListenerSupervisor({
        registry: mule,
        listeners: listenerSpecs(mule).filter((spec) => spec.name === 'moody'),
        enqueue: async () => ({ status: 'enqueued', id: 'unused' }),
        logger: pino({ level: 'silent' }),
        configDir: fixture,
        dataDir,
        scrubPaths: dataPaths({ dataDir, queueDir: path.join(dataDir, 'queue') }).scrub,
        backoff: { initialMs: 5, maxMs: 20 },
      });
      supervisor.start();
      await until(supervisor, (all) => all[0]?.condition?.detail !== undefined, 'the moody listener to report');
      expect(supervisor.status()[0]).toMatchObject({
        state: 'running',
        restarts: 0,
        condition: {
          state: 'outage',
          since: '2026-01-02T03:04:05.000Z',
          detail: 'login as bot:[secret] refused while reading mail/state.json',
        },
      });
      await supervisor.close({ graceMs: 1_000 });
    } finally {
      clearSecretValues();
    }
  });

  it('hands chat and approvals only to the builtin chat integration, the data directory to every listener', async () => {
    const mule = await registry();
    const supervisor = new ListenerSupervisor({
      registry: mule,
      listeners: listenerSpecs(mule).filter((spec) => spec.name === 'nosy'),
      enqueue: async () => ({ status: 'enqueued', id: 'unused' }),
      logger: pino({ level: 'silent' }),
      configDir: fixture,
      dataDir: '/srv/data',
      chat: {} as ChatService,
      approvals: {} as ListenerApprovals,
      backoff: { initialMs: 5, maxMs: 20 },
    });
    supervisor.start();
    await until(supervisor, (all) => all[0]?.lastError !== undefined, 'the nosy listener to report');
    await supervisor.close({ graceMs: 1_000 });
    expect(supervisor.status()[0]?.lastError).toBe('chat: absent, approvals: absent, dataDir: /srv/data');
  });
});
