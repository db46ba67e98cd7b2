import { type LoadedConfig, parseConfig, readYaml, Secret } from '@assistant/config';
import { describe, expect, it } from 'vitest';
import { configSections, effectiveSections, plainValue, problemsTable, valueTable } from './config-view.ts';

describe('config view', () => {
  it('shows a secret by its name only, wherever it is nested', () => {
    const secret = new Secret('llm_key', 'sk-config-view-test-secret-value');
    const out = valueTable({ llms: { default: { token: secret, list: [secret] } } }, 'c').toString();
    expect(out).toContain('(secret: llm_key)');
    expect(out).not.toContain('sk-config-view-test-secret-value');
    // A loaded secret's value pasted into a plain field is scrubbed too.
    expect(plainValue('prefix sk-config-view-test-secret-value')).not.toContain('sk-config-view-test-secret-value');
  });

  it('escapes markup in keys and values, and shows durations in words', () => {
    const out = valueTable({ '<k>': '<script>alert(1)</script>', pollIntervalMs: 90_000 }, 'c').toString();
    expect(out).not.toContain('<script>');
    expect(out).not.toContain('<k>');
    expect(out).toContain('1m30s');
  });

  it('lists a problem with its file, line, column and key', () => {
    const out = problemsTable([
      {
        severity: 'error',
        file: 'config.yaml',
        position: { line: 12, col: 7 },
        path: ['integrations', 0, 'schedule'],
        message: 'bad <value>',
        hint: 'try `every: 15m`',
      },
    ]).toString();
    expect(out).toContain('12:7');
    expect(out).toContain('integrations[0].schedule');
    expect(out).toContain('bad &lt;value&gt;');
    expect(out).toContain('hint: try `every: 15m`');
  });
});

describe('config sections (issue 31, item 6)', () => {
  const text = `data_dir: ./data
worker: {poll_interval: 5m}
queue: {backend: file}
integrations:
  - type: email
    name: personal
    maildir: ./Mail
    window: 14d
    password: !secret mail_password
    schedule: {every: 30m}
    platforms:
      inbox:
        automations:
          - name: file newsletters
            when: {newsletter: true, human: "< 0.2"}
            then: archive
          - name: tell me
            when: {requires_response: true}
            then: [{label: reply}, !yolo unsubscribe]
`;
  const secretsText = 'mail_password: sk-config-view-maildir-password\n';

  function render(options: { withSource: boolean }) {
    const parsed = parseConfig({ text, secretsText });
    if (!parsed.config) throw new Error(parsed.errors.map((problem) => problem.message).join('\n'));
    const config = parsed.config as LoadedConfig;
    const { data } = readYaml({ text, file: 'config.yaml', resolveSecret: () => ({ value: '' }) });
    return {
      config,
      out: configSections({
        config,
        registry: undefined,
        now: new Date('2026-11-28T00:00:00Z'),
        ...(options.withSource ? { source: { data: data as Record<string, unknown> } } : {}),
      }).toString(),
    };
  }

  it("shows config.yaml's keys and units, not internal names or milliseconds, and no Redis with the file backend", () => {
    const { config, out } = render({ withSource: true });
    for (const internal of ['pollIntervalMs', 'everyMs', 'shutdownGraceMs', 'claimGraceMs', 'allowedHosts', 'redis']) {
      expect(out).not.toContain(internal);
    }
    expect(out).not.toContain('1209600000');
    expect(out).not.toContain('300000');
    expect(out).toContain('<th scope="row">poll_interval</th><td><code>5m</code>');
    expect(out).toContain('<th scope="row">window</th><td><code>14d</code>');
    expect(out).toContain('<th scope="row">every</th><td><code>30m</code>');
    // A Maildir instance shows what was written: no IMAP port default.
    expect(out).toContain('<th scope="row">maildir</th>');
    expect(out).not.toContain('<th scope="row">port</th><td><code>993');
    // With the Redis backend its connection is shown.
    const redis = effectiveSections({ ...config, queue: { ...config.queue, backend: 'redis' } });
    expect(redis.queue?.redis).toMatchObject({ url: 'redis://127.0.0.1:6379' });
    expect(effectiveSections(config).queue).not.toHaveProperty('redis');
    // The owner's zone and currency, as config.yaml names them.
    expect(effectiveSections(config).other?.owner).toEqual({
      timezone: config.owner.timeZone,
      currency: config.owner.currency,
    });
  });

  it('shows each rule as written, YAML rather than JSON, and secrets by name only', () => {
    const { out } = render({ withSource: true });
    expect(out).toContain('when:\n  newsletter: true\n  human: &lt; 0.2\nthen: archive');
    expect(out).toContain('then:\n  - label: reply\n  - !yolo unsubscribe');
    expect(out).not.toContain('{&quot;kind&quot;');
    expect(out).toContain('(secret: mail_password)');
    expect(out).not.toContain('sk-config-view-maildir-password');
  });

  it('without the source, shows rules and instances read back into config.yaml terms', () => {
    const { out } = render({ withSource: false });
    expect(out).toContain('then:\n  - archive');
    expect(out).not.toContain('{&quot;kind&quot;');
    expect(out).not.toContain('sk-config-view-maildir-password');
  });
});
