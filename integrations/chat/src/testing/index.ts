// `@assistant/integration-chat/testing`: the chat channels' local fake platforms, for tests and benches only.
export * from './chat-settings.ts';
export * from './fake-discord.ts';
export * from './fake-telegram.ts';
