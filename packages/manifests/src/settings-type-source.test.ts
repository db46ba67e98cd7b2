import { describe, expect, it } from 'vitest';
import { parseManifest } from './read-manifest.ts';
import { settingsTypeSource } from './settings-type-source.ts';

describe('settingsTypeSource', () => {
  it('turns setting types, defaults and requirements into a TypeScript interface', () => {
    const { manifest } = parseManifest(
      `domain: chat_bot
config:
  token: {type: secret, required: true, description: 'The bot token */ here.'}
  mode: {type: enum, values: [poll, "it's"], default: poll}
  timeout: {type: duration, default: 30s}
  ids: {type: list, items: integer}
  rooms: {type: list, items: {type: object, fields: {name: {type: string, required: true}, muted: boolean}}}
platforms:
  messages:
    entry: check
    stages: {check: {handler: ./src/check.ts#check}}
    config:
      limit: {type: integer, default: 5}
`,
      'manifest.yaml',
    );
    const source = settingsTypeSource(manifest);
    expect(source).toContain(['import type { Secret }', 'from', "'@assistant/sdk';"].join(' '));
    expect(source).toContain('export interface ChatBotSettings {');
    expect(source).toContain('  /** The bot token *\\/ here. */\n  token: Secret;');
    expect(source).toContain("  mode: 'poll' | 'it\\'s';");
    expect(source).toContain('  /** Milliseconds. */\n  timeout: number;');
    expect(source).toContain('  ids?: number[];');
    expect(source).toContain('  rooms?: {\n    name: string;\n    muted?: boolean;\n  }[];');
    expect(source).toContain('export interface ChatBotMessagesPlatformSettings {\n  limit: number;\n}');
  });

  it('imports nothing for settings without secrets', () => {
    const { manifest } = parseManifest('domain: plain\nconfig: {name: string}\n', 'manifest.yaml');
    expect(settingsTypeSource(manifest)).not.toContain('import');
  });
});
