import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManifestError } from '@assistant/manifests';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { importInboundHandler, type ListenerFunction } from './inbound-handlers.ts';
import type { IntegrationRegistry } from './integration-registry.ts';
import { loadRuntime } from './load-runtime.ts';
import { installation } from './testing/installation.ts';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const inbound = path.join(repoRoot, 'tests/fixtures/integrations/inbound');
/** How errors name the fixtures' manifests: relative to the working directory, the repository here. */
const shown = (name: string) => `tests/fixtures/integrations/inbound/${name}/manifest.yaml`;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-inbound-checks-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A registry of the fixture integrations named, with config.yaml's `integrations:` as given. */
async function registryOf(fixtures: readonly string[], instances: string): Promise<IntegrationRegistry> {
  const configPath = path.join(dir, 'config.yaml');
  const folders = fixtures.map((name) => JSON.stringify(path.join(inbound, name)));
  await writeFile(configPath, `integration_dirs: [${folders.join(', ')}]\nintegrations:\n${instances}`);
  const { registry } = await loadRuntime({ installation, configPath, cwd: repoRoot });
  return registry;
}

async function manifestProblems(promise: Promise<unknown>): Promise<string[]> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ManifestError);
  return (error as ManifestError).message.split('\n').slice(1);
}

describe('listener and webhook handler checks', () => {
  it("refuses the server's start on a missing or escaping module of an enabled instance, at the manifest lines", async () => {
    const registry = await registryOf(['misplaced'], '  - {type: misplaced, name: placed}\n');
    expect(await manifestProblems(registry.checkHandlerModules({ taskTypes: false, inbound: 'enabled' }))).toEqual([
      `${shown('misplaced')}:7:10: listeners.poll.handler: ./src/absent.ts does not exist`,
      `${shown('misplaced')}:10:5: webhooks.escape.handler: ./../hooky/src/hooky.ts#receive is outside the integration's folder`,
    ]);
    // The worker's check covers task types only: their module exists.
    await registry.checkHandlerModules();
  });

  it('leaves alone the listeners and webhooks of an integration with no enabled instance', async () => {
    const registry = await registryOf(['misplaced'], '  - {type: misplaced, name: placed, enabled: false}\n');
    // The builtin chat integration's Telegram, Matrix, Discord, Slack and email listeners and its webhooks are the only
    // ones left (its default instance is enabled).
    expect(
      registry.inboundHandlers({ enabledOnly: true }).map((info) => `${info.domain} ${info.kind} ${info.name}`),
    ).toEqual([
      'chat listener telegram',
      'chat listener matrix',
      'chat listener discord',
      'chat listener slack',
      'chat listener email',
      'chat webhook signed',
      'chat webhook slack_events',
    ]);
    await registry.checkHandlerModules({ taskTypes: false, inbound: 'enabled' });
    // `config check` looks at every manifest, so it still reports them.
    expect(await manifestProblems(registry.loadHandlers({ inbound: 'all' }))).toHaveLength(2);
  });

  it('reports a missing export and an export that is not a function when imported, at the manifest lines', async () => {
    const registry = await registryOf(['miswired'], '  []\n');
    // Their module exists, so the start check passes: only importing finds these.
    await registry.checkHandlerModules({ inbound: 'all' });
    await registry.loadHandlers();
    expect(await manifestProblems(registry.loadHandlers({ inbound: 'all' }))).toEqual([
      `${shown('miswired')}:7:10: listeners.poll.handler: ./src/miswired.ts exports no \`lisen\` (it exports: listen, noop)`,
      `${shown('miswired')}:10:5: webhooks.deliveries.handler: \`receive\` in ./src/miswired.ts is an object, not a handler function`,
    ]);
    await expect(
      importInboundHandler(registry, { domain: 'miswired', kind: 'listener', name: 'poll' }),
    ).rejects.toThrow(
      /miswired\/manifest\.yaml:7:10: listeners\.poll\.handler: \.\/src\/miswired\.ts exports no `lisen`/,
    );
  });

  it('imports a working listener and webhook through the registry', async () => {
    const registry = await registryOf(['hooky'], '  - {type: hooky, name: hooks}\n');
    expect(
      registry
        .inboundHandlers()
        .filter((info) => info.domain === 'hooky')
        .map((info) => [info.kind, info.name, info.handler.manifestKey.join('.')]),
    ).toEqual([
      ['listener', 'poll', 'listeners.poll.handler'],
      ['webhook', 'deliveries', 'webhooks.deliveries.handler'],
      ['webhook', 'manual', 'webhooks.manual.handler'],
    ]);
    await registry.checkHandlerModules({ inbound: 'enabled' });
    await registry.loadHandlers({ inbound: 'all' });
    const listen = await importInboundHandler<ListenerFunction>(registry, {
      domain: 'hooky',
      kind: 'listener',
      name: 'poll',
    });
    expect(listen.name).toBe('listen');
    await expect(registry.inboundHandler({ domain: 'hooky', kind: 'listener', name: 'deliveries' })).rejects.toThrow(
      'the hooky integration declares no listener `deliveries`',
    );
  });
});
