import type { HandlerContext, JsonValue } from '@assistant/sdk';
import { describe, expect, it } from 'vitest';
import type { ChatSettings } from './settings.generated.ts';
import { chatSettingsDefaults } from './testing/chat-settings.ts';
import { isOwner, runChatTurn } from './turn.ts';

const settings: ChatSettings = {
  ...chatSettingsDefaults,
};

/** Only what runChatTurn reads before it touches a store. */
function context(payload: unknown, extra: Record<string, unknown> = {}): HandlerContext<JsonValue, ChatSettings> {
  return {
    payload,
    instance: { name: 'chat', domain: 'chat', settings, llm: 'default' },
    ...extra,
  } as unknown as HandlerContext<JsonValue, ChatSettings>;
}

describe('runChatTurn', () => {
  it('refuses a payload that is not {conversation, message}, without retries', async () => {
    await expect(runChatTurn(context({ conversation: 'c1' }))).rejects.toMatchObject({
      name: 'UnrecoverableError',
      message: expect.stringContaining('message'),
    });
    await expect(runChatTurn(context({ conversation: '../x', message: 'm1' }))).rejects.toMatchObject({
      name: 'UnrecoverableError',
    });
  });

  it('runs only with the chat stores the worker gives the builtin chat integration', async () => {
    await expect(runChatTurn(context({ conversation: 'c1', message: 'm1' }))).rejects.toMatchObject({
      name: 'UnrecoverableError',
      message: expect.stringContaining('builtin chat integration'),
    });
  });
});

describe('runChatTurn settings', () => {
  it('refuses an instance whose persona setting is not a persona name, without retries', async () => {
    const instance = { name: 'chat', domain: 'chat', settings: { ...settings, persona: '../x' }, llm: 'default' };
    await expect(
      runChatTurn(context({ conversation: 'c1', message: 'm1' }, { chat: {}, instance })),
    ).rejects.toMatchObject({ name: 'UnrecoverableError', message: expect.stringContaining('persona "../x"') });
  });
});

describe('isOwner', () => {
  it('is the owner peer, or on Telegram and Matrix an allowed user; anyone else is not', () => {
    expect(isOwner({ channel: 'api', peer: 'owner' }, settings)).toBe(true);
    expect(isOwner({ channel: 'api', peer: 'someone' }, settings)).toBe(false);
    const telegram = { ...settings, telegram: { allowed_users: [42] } } as ChatSettings;
    expect(isOwner({ channel: 'telegram', peer: '42' }, telegram)).toBe(true);
    expect(isOwner({ channel: 'telegram', peer: '43' }, telegram)).toBe(false);
    expect(isOwner({ channel: 'telegram', peer: '42' }, settings)).toBe(false);
    expect(isOwner({ channel: 'cli', peer: '42' }, telegram)).toBe(false);
    const matrix = { ...settings, matrix: { allowed_users: ['@me:example.org'] } } as ChatSettings;
    expect(isOwner({ channel: 'matrix', peer: '@me:example.org' }, matrix)).toBe(true);
    expect(isOwner({ channel: 'matrix', peer: '@you:example.org' }, matrix)).toBe(false);
    expect(isOwner({ channel: 'telegram', peer: '@me:example.org' }, matrix)).toBe(false);
    const discord = { ...settings, discord: { allowed_users: ['300000000000000001'] } } as ChatSettings;
    expect(isOwner({ channel: 'discord', peer: '300000000000000001' }, discord)).toBe(true);
    expect(isOwner({ channel: 'discord', peer: '300000000000000002' }, discord)).toBe(false);
    expect(isOwner({ channel: 'matrix', peer: '300000000000000001' }, discord)).toBe(false);
  });
});
