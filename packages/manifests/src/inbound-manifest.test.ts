import { describe, expect, it } from 'vitest';
import { ManifestError, parseManifest } from './read-manifest.ts';

function problemsOf(text: string) {
  try {
    parseManifest(text, 'hooky/manifest.yaml');
  } catch (error) {
    if (error instanceof ManifestError) return error.problems;
    throw error;
  }
  throw new Error('expected the manifest to be refused');
}

const base = `domain: hooky
config:
  webhook_secret: secret
  label: string
`;

describe('manifest listeners and webhooks', () => {
  it('reads listeners and webhooks with their defaults', () => {
    const { manifest } = parseManifest(
      `${base}listeners:
  poll: {handler: ./src/poll.ts#listen, description: Long-polls.}
webhooks:
  deliveries:
    handler: ./src/hook.ts#receive
    auth: hmac-sha256
    secret_setting: webhook_secret
    signature_header: X-Hub-Signature-256
  manual: {handler: ./src/hook.ts#manual, auth: token, methods: [POST, PUT], max_body: 2048}
`,
      'hooky/manifest.yaml',
    );
    expect(manifest.listeners).toEqual({ poll: { handler: './src/poll.ts#listen', description: 'Long-polls.' } });
    expect(manifest.webhooks.deliveries).toMatchObject({
      methods: ['POST'],
      max_body: 1024 * 1024,
      auth: 'hmac-sha256',
      signature_header: 'x-hub-signature-256',
    });
    expect(manifest.webhooks.manual).toMatchObject({ methods: ['POST', 'PUT'], max_body: 2048, auth: 'token' });
  });

  it('locates a listener without a valid handler at its file, line and key', () => {
    const problems = problemsOf(`${base}listeners:\n  poll:\n    handler: src/poll.ts\n    every: 5s\n`);
    expect(problems).toEqual([
      expect.objectContaining({
        file: 'hooky/manifest.yaml',
        line: 7,
        path: ['listeners', 'poll', 'handler'],
        message: expect.stringContaining('is not a handler reference'),
      }),
      expect.objectContaining({ line: 8, path: ['listeners', 'poll', 'every'], message: 'unknown key `every`' }),
    ]);
  });

  it('refuses a webhook that does not say how it is authenticated', () => {
    const problems = problemsOf(`${base}webhooks:\n  open:\n    handler: ./src/hook.ts#receive\n`);
    expect(problems).toEqual([
      // The key is missing: the problem points at the webhook that lacks it.
      expect.objectContaining({
        line: 6,
        path: ['webhooks', 'open', 'auth'],
        message: expect.stringContaining(
          '`auth: hmac-sha256`, `auth: standard-webhooks`, `auth: slack` or `auth: token`',
        ),
      }),
    ]);
  });

  it('refuses an hmac webhook without its secret and header, and token auth with hmac keys', () => {
    const problems = problemsOf(
      `${base}webhooks:\n  signed: {handler: ./src/hook.ts#receive, auth: hmac-sha256}\n  plain: {handler: ./src/hook.ts#receive, auth: token, signature_header: X-Sig}\n`,
    );
    expect(problems.map((problem) => [problem.line, problem.path.join('.'), problem.message])).toEqual([
      [6, 'webhooks.signed.secret_setting', '`auth: hmac-sha256` needs `secret_setting`'],
      [6, 'webhooks.signed.signature_header', '`auth: hmac-sha256` needs `signature_header`'],
      [7, 'webhooks.plain.signature_header', '`signature_header` is only for `auth: hmac-sha256`'],
    ]);
  });

  it('refuses a secret_setting that is not a secret setting of the manifest', () => {
    const problems = problemsOf(
      `${base}webhooks:
  a: {handler: ./src/hook.ts#a, auth: hmac-sha256, secret_setting: label, signature_header: X-Sig}
  b: {handler: ./src/hook.ts#b, auth: hmac-sha256, secret_setting: missing, signature_header: X-Sig}
`,
    );
    expect(problems).toEqual([
      expect.objectContaining({
        line: 6,
        path: ['webhooks', 'a', 'secret_setting'],
        message: '`label` is a string setting; a webhook secret must be of type `secret`',
      }),
      expect.objectContaining({
        line: 7,
        path: ['webhooks', 'b', 'secret_setting'],
        message: expect.stringContaining('`missing` is not a setting under `config:`'),
      }),
    ]);
  });

  it('refuses an hmac webhook that takes a method without a body, at its methods line', () => {
    const problems = problemsOf(
      `${base}webhooks:
  peek:
    handler: ./src/hook.ts#a
    auth: hmac-sha256
    secret_setting: webhook_secret
    signature_header: X-Sig
    methods: [GET]
  mixed: {handler: ./src/hook.ts#a, auth: hmac-sha256, secret_setting: webhook_secret, signature_header: X-Sig, methods: [POST, DELETE]}
  asked: {handler: ./src/hook.ts#a, auth: token, methods: [GET, DELETE]}
`,
    );
    expect(problems.map((problem) => [problem.line, problem.path.join('.'), problem.message])).toEqual([
      [
        11,
        'webhooks.peek.methods',
        '`auth: hmac-sha256` signs the body, which GET requests do not have; use `auth: token` for them, or only methods with a body (POST, PUT, PATCH)',
      ],
      [12, 'webhooks.mixed.methods', expect.stringContaining('which DELETE requests do not have')],
    ]);
  });

  it('reads a standard-webhooks webhook whose secret is a field of an object setting, and checks that field', () => {
    const nested = `domain: hooky
config:
  webhooks:
    type: object
    fields:
      secret: secret
      label: string
`;
    const { manifest } = parseManifest(
      `${nested}webhooks:\n  signed: {handler: ./src/hook.ts#a, auth: standard-webhooks, secret_setting: webhooks.secret}\n`,
      'hooky/manifest.yaml',
    );
    expect(manifest.webhooks.signed).toMatchObject({ auth: 'standard-webhooks', secret_setting: 'webhooks.secret' });
    const problems = problemsOf(
      `${nested}webhooks:
  c: {handler: ./src/hook.ts#a, auth: standard-webhooks}
  d: {handler: ./src/hook.ts#a, auth: standard-webhooks, secret_setting: webhooks.secret, methods: [GET], signature_header: X-Sig}
`,
    );
    expect(problems.map((problem) => [problem.path.join('.'), problem.message])).toEqual([
      ['webhooks.c.secret_setting', '`auth: standard-webhooks` needs `secret_setting`'],
      ['webhooks.d.methods', expect.stringContaining('which GET requests do not have')],
      ['webhooks.d.signature_header', '`signature_header` is only for `auth: hmac-sha256`'],
    ]);
    const wrongSetting = problemsOf(
      `${nested}webhooks:
  a: {handler: ./src/hook.ts#a, auth: standard-webhooks, secret_setting: webhooks.label}
  b: {handler: ./src/hook.ts#a, auth: standard-webhooks, secret_setting: webhooks.none}
`,
    );
    expect(wrongSetting.map((problem) => [problem.path.join('.'), problem.message])).toEqual([
      ['webhooks.a.secret_setting', '`webhooks.label` is a string setting; a webhook secret must be of type `secret`'],
      ['webhooks.b.secret_setting', expect.stringContaining('`webhooks.none` is not a setting under `config:`')],
    ]);
  });

  it('refuses a body cap beyond 25 MiB and unknown methods', () => {
    const problems = problemsOf(
      `${base}webhooks:\n  big: {handler: ./src/hook.ts#a, auth: token, max_body: 999999999, methods: [TRACE]}\n`,
    );
    expect(problems.map((problem) => problem.path.join('.'))).toEqual([
      'webhooks.big.methods.0',
      'webhooks.big.max_body',
    ]);
  });
});

describe('manifest actions', () => {
  it('takes argument_optional only beside an argument', () => {
    const platform = (actions: string) =>
      `${base}platforms:\n  items:\n    entry: check\n    stages:\n      check: {handler: ./src/check.ts#check}\n    actions:\n${actions}`;
    const { manifest } = parseManifest(
      platform('      comment: {tier: irreversible, argument: string, argument_optional: true}\n'),
      'hooky/manifest.yaml',
    );
    expect(manifest.platforms.items?.actions.comment).toMatchObject({ argument: 'string', argument_optional: true });
    expect(
      problemsOf(platform('      close: {tier: soft, argument_optional: true}\n')).map((problem) => [
        problem.path.join('.'),
        problem.message,
      ]),
    ).toEqual([
      [
        'platforms.items.actions.close.argument_optional',
        '`argument_optional` is only for an action with an `argument`',
      ],
    ]);
  });
});
