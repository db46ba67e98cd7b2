import net from 'node:net';
import { AssistantError } from '@assistant/errors';

/** Where the server listens: `server.host` and `server.port` of config.yaml. */
export interface ListenAddress {
  host: string;
  port: number;
}

/**
 * The error a person should read when the server's port is taken, most often by a second Assistant:
 * `port 8765 is in use: change server.port or stop the other instance`. Any other error is returned unchanged.
 */
export function explainListenError(error: unknown, address: ListenAddress): unknown {
  if (!(error instanceof Error) || (error as NodeJS.ErrnoException).code !== 'EADDRINUSE') return error;
  return new AssistantError(
    'PORT_IN_USE',
    `port ${address.port} is in use: change server.port or stop the other instance`,
    { cause: error, hint: `another process listens on ${address.host}:${address.port}; \`ss -ltnp\` names it` },
  );
}

/**
 * Throws `PORT_IN_USE` when `host:port` cannot be bound right now. `assistant start` asks before it starts the
 * server and the worker, so a taken port stops it with one clear line instead of a child's dying words; the server
 * still explains the same error itself, as the port can be taken in between.
 */
export async function assertPortFree(address: ListenAddress): Promise<void> {
  const probe = net.createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen({ host: address.host, port: address.port, exclusive: true }, () => resolve());
    });
  } catch (error) {
    throw explainListenError(error, address);
  } finally {
    await new Promise<void>((resolve) => (probe.listening ? probe.close(() => resolve()) : resolve()));
  }
}
