import type { ChatSettings } from '../settings.generated.ts';

/**
 * The chat integration's settings as its manifest defaults them, every channel off: a test spreads it and sets the
 * channel it runs (`{...chatSettingsDefaults, telegram: {...}}`), so a channel added to the manifest changes this one
 * place, not every test's settings.
 */
export const chatSettingsDefaults = {
  mode: 'followup',
  collect_window: 1_000,
  collect_max: 20,
  max_steps: 20,
  mcp_servers: [],
  persona: 'assistant',
  telegram: { allowed_users: [], api_root: 'https://api.telegram.org', poll_timeout: 30_000 },
  matrix: { homeserver: 'https://matrix.org', allowed_users: [], poll_timeout: 30_000 },
  discord: { allowed_users: [], api_root: 'https://discord.com/api' },
  retention: {
    events_max_bytes: 1_048_576,
    events_max_age: 604_800_000,
    events_idle: 600_000,
    answered_inbox: 604_800_000,
  },
} satisfies ChatSettings;
