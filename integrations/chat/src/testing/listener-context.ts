import type { ChatService } from '@assistant/chat';
import type { ListenerApprovals, ListenerCondition, ListenerContext } from '@assistant/sdk';
import type { ChatSettings } from '../settings.generated.ts';

/**
 * The context the server's supervisor hands one of the chat integration's listeners (the instance `chat`), for a
 * test that runs the listener in its own process. Its `enqueue` fails the test: chat listeners enqueue turns through
 * the chat service.
 */
export function chatListenerContext(options: {
  /** The listener's name in the manifest: `telegram`, `discord`, … */
  listener: string;
  settings: ChatSettings;
  logger: ListenerContext['logger'];
  signal: AbortSignal;
  chat: ChatService;
  dataDir: string;
  /** The folder of config.yaml. @default dataDir */
  configDir?: string;
  approvals?: ListenerApprovals | undefined;
  condition?: ((condition: ListenerCondition) => void) | undefined;
}): ListenerContext<ChatSettings> {
  const { listener, settings, logger, signal, chat, dataDir, configDir, approvals, condition } = options;
  return {
    instance: { name: 'chat', domain: 'chat', settings },
    listener,
    logger,
    enqueue: async () => {
      throw new Error(`the ${listener} listener enqueues through the chat service, not this`);
    },
    signal,
    configDir: configDir ?? dataDir,
    dataDir,
    chat,
    ...(approvals ? { approvals } : {}),
    ...(condition ? { condition } : {}),
  };
}
