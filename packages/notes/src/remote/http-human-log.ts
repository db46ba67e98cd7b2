import { scrubSecrets } from '@assistant/errors';
import type { HumanLog, HumanLogEntry } from '../human-log.ts';
import { emptyAnswerWire, remoteStoreRoutes } from './note-wire.ts';
import { RemoteStoreClient, type RemoteStoreOptions } from './store-client.ts';

/**
 * The server's daily human log, through its API: a worker on another machine writes its lines where the owner reads
 * them (the server's `data/logs`), each appended whole by the server's FileHumanLog.
 */
export class HttpHumanLog implements HumanLog {
  readonly #client: RemoteStoreClient;

  constructor(options: RemoteStoreOptions) {
    this.#client = new RemoteStoreClient(options);
  }

  async write(entry: HumanLogEntry): Promise<void> {
    // Scrubbed here as well as on the server: the server knows its own secrets, not the ones this worker loaded.
    await this.#client.send({
      method: 'POST',
      route: remoteStoreRoutes.log,
      body: {
        source: scrubSecrets(entry.source),
        message: scrubSecrets(entry.message),
        ...(entry.reason === undefined ? {} : { reason: scrubSecrets(entry.reason) }),
        ...(entry.link === undefined ? {} : { link: scrubSecrets(entry.link) }),
        at: (entry.at ?? new Date()).toISOString(),
      },
      answer: emptyAnswerWire,
    });
  }
}
