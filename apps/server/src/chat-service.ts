import { type ChatMode, ChatService, chatModes, defaultChatPersona, personaNamePattern } from '@assistant/chat';
import type { LoadedConfig } from '@assistant/config';
import type { IntegrationRegistry } from '@assistant/integration-host';
import type { NoteStore } from '@assistant/notes';
import type { TaskQueue } from '@assistant/queue';

/** The builtin chat integration's default instance (integrations/chat/manifest.yaml). */
const defaultChatInstance = 'chat';

export interface ConfiguredChatServiceOptions {
  config: LoadedConfig;
  notes: NoteStore;
  queue: Pick<TaskQueue, 'enqueue'>;
  /** Where the chat instance's settings come from. @default none: instance `chat`, mode `followup` */
  registry?: IntegrationRegistry | undefined;
  /** Told about a `mode` setting that is not a mode, or a `persona` that is not a persona name. */
  warn: (message: string) => void;
}

/**
 * The ChatService of a config (the server's one, for REST routes and listeners; `assistant chat`'s): conversations under the notes folder, inbox and event logs
 * under the data directory, turns enqueued for the builtin `chat` instance, new conversations in its `mode` setting,
 * recording its `persona` setting.
 */
export function configuredChatService(options: ConfiguredChatServiceOptions): ChatService {
  const instance = defaultChatInstance;
  const setting = options.registry?.instance(instance)?.settings.mode;
  let defaultMode: ChatMode = 'followup';
  if (setting !== undefined) {
    if ((chatModes as readonly unknown[]).includes(setting)) defaultMode = setting as ChatMode;
    else {
      options.warn(
        `integration instance \`${instance}\`: setting \`mode\` is ${JSON.stringify(setting)}, not one of ${chatModes.join(', ')}; new conversations use followup`,
      );
    }
  }
  const personaSetting = options.registry?.instance(instance)?.settings.persona;
  let defaultPersona = defaultChatPersona;
  if (personaSetting !== undefined) {
    if (typeof personaSetting === 'string' && personaNamePattern.test(personaSetting)) defaultPersona = personaSetting;
    else {
      options.warn(
        `integration instance \`${instance}\`: setting \`persona\` is ${JSON.stringify(personaSetting)}, not a persona name (letters, digits, _ and -); new conversations use ${defaultChatPersona}`,
      );
    }
  }
  return new ChatService({
    notes: options.notes,
    dataDir: options.config.paths.dataDir,
    controlRoot: options.config.paths.control,
    queue: options.queue,
    instance,
    defaultMode,
    defaultPersona,
  });
}
