import { randomBytes } from 'node:crypto';
import { link, mkdir, open, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { LoadedConfig } from '@assistant/config';
import { AssistantError, registerSecretValue } from '@assistant/errors';

/** The token file's name inside the data directory. */
const apiTokenFileName = 'api-token';

export interface ApiToken {
  /** What `Authorization: Bearer …` must carry. */
  value: string;
  /** `config`: `server.token` from secrets.yaml; `file`: `data/api-token`. */
  source: 'config' | 'file';
  /** The file the token lives in: secrets.yaml or data/api-token. */
  file: string;
  /** True when this call created data/api-token. */
  created: boolean;
  /** Something the owner should fix, such as a token file other users can read. */
  warning?: string;
}

export interface ResolveApiTokenOptions {
  config: LoadedConfig;
  /** Create data/api-token when there is none. @default true */
  create?: boolean;
}

/** The path of the per-install token file for a config. */
function apiTokenPath(config: LoadedConfig): string {
  return path.join(config.paths.dataDir, apiTokenFileName);
}

/**
 * The API token: `server.token` when secrets.yaml configures one, else the per-install token in `data/api-token`,
 * created on first use (32 random bytes, base64url, mode 0600 in a data directory created 0700). Every caller of
 * the API, local ones included, needs it: any local user and any web page can reach 127.0.0.1.
 */
export async function resolveApiToken(options: ResolveApiTokenOptions): Promise<ApiToken> {
  const { config } = options;
  const configured = configuredApiToken(config);
  if (configured !== undefined) return configured;
  const file = apiTokenPath(config);
  let created = false;
  let text = await readTokenFile(file);
  if (text === undefined) {
    if (options.create === false) {
      throw new AssistantError('NOT_FOUND', `${file} does not exist yet`, {
        hint: 'the server creates it on its first start; run `assistant start` (or `assistant token`) once',
      });
    }
    created = await createTokenFile(file);
    text = await readTokenFile(file);
    if (text === undefined) throw new Error(`${file} vanished right after it was created`);
  }
  const value = text.trim();
  if (!/^[\x21-\x7e]{16,}$/.test(value)) {
    throw new AssistantError('CONFIG_INVALID', `${file} does not hold a token (16 or more printable characters)`, {
      hint: `delete ${file}; the server makes a new one on its next start (clients then need the new token)`,
    });
  }
  registerSecretValue(value);
  const mode = process.platform === 'win32' ? 0o600 : (await stat(file)).mode & 0o777;
  return {
    value,
    source: 'file',
    file,
    created,
    ...((mode & 0o077) === 0
      ? {}
      : { warning: `${file} is readable by other users (mode ${mode.toString(8)}); run \`chmod 600 ${file}\`` }),
  };
}

/**
 * `server.token` when secrets.yaml configures one (its Secret registered itself for scrubbing), undefined when it
 * does not. Throws for a blank one: a blank secret must not quietly turn authentication off.
 */
export function configuredApiToken(config: LoadedConfig): ApiToken | undefined {
  const configured = config.server.token;
  if (configured === undefined) return undefined;
  if (!configured.isSet) {
    throw new AssistantError(
      'CONFIG_INVALID',
      `server.token is configured but its secret \`${configured.name}\` is blank`,
      { hint: 'put the token in secrets.yaml, or remove `token:` from `server:` to use data/api-token' },
    );
  }
  return { value: configured.reveal(), source: 'config', file: config.paths.secretsFile, created: false };
}

async function readTokenFile(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Writes a fresh token beside the final name (O_EXCL, 0600), then links it into place: a reader never sees a
 * half-written token, and when two processes start at once the first link wins and the other reads that token.
 */
async function createTokenFile(file: string): Promise<boolean> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(temporary, 'wx', 0o600);
  try {
    await handle.writeFile(`${randomBytes(32).toString('base64url')}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await link(temporary, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    await rm(temporary, { force: true });
  }
}
