import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LoadedConfig } from '@assistant/config';
import { IntegrationRegistry } from '@assistant/integration-host';
import { discoverIntegrations } from '@assistant/manifests';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { type ListenerStatus, ListenerSupervisor } from './listener-supervisor.ts';

const fixture = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../tests/fixtures/integrations/inbound/stubborn',
);

async function registry(): Promise<IntegrationRegistry> {
  const integrations = await discoverIntegrations({ builtinDir: path.join(fixture, 'none'), customDirs: [fixture] });
  const config = {
    integrations: [{ type: 'stubborn', name: 'mule', enabled: true, settings: {}, platforms: {} }],
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
    const supervisor = new ListenerSupervisor({
      registry: await registry(),
      enqueue: async () => ({ status: 'enqueued', id: 'unused' }),
      logger,
      configDir: fixture,
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
    expect(byId['mule/missing']?.lastError).toMatch(/exports no function `notExported`/);
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
});
