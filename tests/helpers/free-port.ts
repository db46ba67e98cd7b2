import net from 'node:net';

/**
 * A loopback port that was free a moment ago: bind port 0, read the number, close. For processes that must be
 * told a fixed port up front; another process could take it in between, which on a test machine is rare enough.
 */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('expected a TCP address');
  return address.port;
}
