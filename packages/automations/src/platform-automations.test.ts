// How a platform's rules name services: `domain.instance.service` in full, or `domain.service` for the domain's
// default instance, which resolves to the full call (the action's name and key) or says why it cannot.
import type { Action, Config } from '@assistant/config';
import { type DiscoveredIntegration, parseManifest } from '@assistant/manifests';
import { describe, expect, it } from 'vitest';
import { compilePlatformAutomations } from './platform-automations.ts';

function integration(text: string): DiscoveredIntegration {
  const { manifest, source } = parseManifest(text, 'manifest.yaml');
  return {
    manifest,
    source,
    manifestPath: '/x/manifest.yaml',
    shownPath: 'manifest.yaml',
    directory: '/x',
    origin: 'builtin',
  };
}

const research = integration(`domain: research
default_instance: {name: research}
services:
  web: {handler: ./src/web.ts#web, reversible: true}
`);
const mail = integration(`domain: mail
platforms:
  inbox:
    entry: check
    stages:
      check: {handler: ./src/mail.ts#check}
    fields:
      urgent: boolean
    actions:
      archive: {tier: soft}
services:
  forward: {handler: ./src/mail.ts#forward, reversible: false}
`);
const inbox = mail.manifest.platforms.inbox as NonNullable<typeof mail.manifest.platforms.inbox>;

function compile(call: string, instances: { name: string; type: string }[]) {
  const action: Action = { kind: 'service', call, inputs: { question: 'why?' }, yolo: false };
  return compilePlatformAutomations({
    config: {
      scripts: {},
      integrations: instances.map((instance) => ({ ...instance })) as unknown as Config['integrations'],
    },
    integrations: [research, mail],
    platform: inbox,
    platformConfig: {
      classifications: {},
      automations: [{ name: 'look it up', when: { urgent: true }, actions: [action], approval: false }],
    },
  });
}

describe('service calls in rules', () => {
  it('resolves `domain.service` to the default instance, as configured or as the manifest names it', () => {
    // No research instance in config.yaml: the manifest's default instance runs research tasks.
    const fallback = compile('research.web', [{ name: 'work', type: 'mail' }]);
    expect(fallback.problems).toEqual([]);
    expect(fallback.rules[0]?.actions).toEqual([
      expect.objectContaining({ kind: 'service', name: 'research.research.web', key: 'service:research.research.web' }),
    ]);
    // The full form of the same call is the same action.
    expect(compile('research.research.web', []).rules[0]?.actions).toEqual(fallback.rules[0]?.actions);
    // The only configured instance, whatever its name; among several, the one named like the domain.
    expect(compile('research.web', [{ name: 'deep', type: 'research' }]).rules[0]?.actions[0]?.name).toBe(
      'research.deep.web',
    );
    expect(
      compile('research.web', [
        { name: 'deep', type: 'research' },
        { name: 'research', type: 'research' },
      ]).rules[0]?.actions[0]?.name,
    ).toBe('research.research.web');
  });

  it('names what is wrong with a call that names no instance or no service', () => {
    const several = compile('research.web', [
      { name: 'deep', type: 'research' },
      { name: 'quick', type: 'research' },
    ]);
    expect(several.problems.map((problem) => problem.message)).toEqual([
      expect.stringContaining(
        'there are several research instances and none is named `research`; name one: `research.deep.web`, `research.quick.web`',
      ),
    ]);
    // Once config.yaml names research instances, the manifest's default one is not among them.
    expect(compile('research.research.web', [{ name: 'deep', type: 'research' }]).problems[0]?.message).toContain(
      'there is no research instance named `research`',
    );
    expect(compile('mail.forward', []).problems[0]?.message).toContain('there is no mail instance');
    expect(compile('research.search', []).problems[0]?.message).toContain(
      'the research integration has no service `search` (it has: web)',
    );
  });
});
