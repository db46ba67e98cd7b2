import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { waitUntil } from './wait-until.ts';

/** The per-install API token the server writes to `<dataDir>/api-token` on its first start. */
export async function readApiToken(dataDir: string): Promise<string> {
  const text = await waitUntil(
    async () => (await readFile(path.join(dataDir, 'api-token'), 'utf8').catch(() => '')).trim() || undefined,
    { what: `${dataDir}/api-token` },
  );
  return text;
}

/** `fetch` that sends `Authorization: Bearer <token>` on every request. */
export function fetchWithToken(token: string): typeof fetch {
  return (input, init = {}) =>
    fetch(input, {
      ...init,
      headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) },
    });
}
