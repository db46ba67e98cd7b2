import net from 'node:net';
import { isAssistantError } from '@assistant/errors';
import { describe, expect, it } from 'vitest';
import { assertPortFree, explainListenError } from './port-in-use.ts';

/** A listener on a loopback port, closed by `await using`. */
async function occupiedPort(): Promise<{ port: number } & AsyncDisposable> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('expected a TCP address');
  return {
    port: address.port,
    [Symbol.asyncDispose]: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('assertPortFree', () => {
  it('refuses a taken port with PORT_IN_USE, saying what to do', async () => {
    await using taken = await occupiedPort();
    const error = await assertPortFree({ host: '127.0.0.1', port: taken.port }).catch((caught: unknown) => caught);
    expect(isAssistantError(error, 'PORT_IN_USE')).toBe(true);
    expect((error as Error).message).toBe(
      `port ${taken.port} is in use: change server.port or stop the other instance`,
    );
    expect(((error as Error).cause as NodeJS.ErrnoException).code).toBe('EADDRINUSE');
  });

  it('resolves for a free port and leaves it free', async () => {
    const port = await (async () => {
      await using taken = await occupiedPort();
      return taken.port;
    })();
    await assertPortFree({ host: '127.0.0.1', port });
    // The probe closed its listener: the port can be bound again.
    await assertPortFree({ host: '127.0.0.1', port });
  });
});

describe('explainListenError', () => {
  it('leaves errors other than EADDRINUSE as they are', () => {
    const denied = Object.assign(new Error('listen EACCES: permission denied 0.0.0.0:80'), { code: 'EACCES' });
    expect(explainListenError(denied, { host: '0.0.0.0', port: 80 })).toBe(denied);
    expect(explainListenError('text', { host: '0.0.0.0', port: 80 })).toBe('text');
  });
});
