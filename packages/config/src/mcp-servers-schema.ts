import { durationSchema } from '@assistant/queue';
import * as z from 'zod';
import { Secret } from './secret.ts';
import { refuseUrlCredentials } from './url-credentials.ts';

// `mcp_servers:` — Model Context Protocol servers whose tools agent loops may use (docs/mcp.md). One object per
// server rather than a union of a stdio and an HTTP shape: a union's errors name neither branch well, and a key of
// the wrong transport (`headers` beside `command`) deserves its own sentence.

/**
 * An environment or header value: `!secret name`, or plain text. Unlike a secret field, plain text loads without a
 * warning: most such values (`ROOT: /srv/files`, `X-Client: assistant`) are not secret.
 */
const valueOrSecret = z.union([z.instanceof(Secret), z.string()], {
  error: 'expected text or `!secret name`',
});

/** A tool name pattern: the tool's own name as its server calls it, `*` matching any run of characters. */
const toolPattern = z
  .string({ error: 'expected a tool name or a pattern with *' })
  .min(1)
  .max(200)
  .regex(/^[^\s]+$/, { error: 'a tool name pattern has no spaces' });

/**
 * The default largest message read from an MCP server: far above what a model is shown of a result (20,000
 * characters), far below what hurts the worker. The SDK's own stdio limit (10 MiB) throws where nothing catches it.
 */
const defaultMaxResponseBytes = 8 * 1024 * 1024;

const byteUnits: Record<string, number> = { b: 1, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 };

const byteCountError = 'expected a number of bytes, or a size such as `512 KiB`, `8 MiB` or `1 GiB`';

/** A number of bytes: an integer, or text such as `512 KiB`, `8 MiB`, `1 GiB`. */
const byteCountSchema = z.union(
  [
    z.int().positive(),
    z
      .string()
      .regex(/^\s*\d+(\.\d+)?\s*(B|KiB|MiB|GiB)\s*$/i, { error: byteCountError })
      .transform((text) => {
        const [, amount = '', unit = ''] = /^\s*(\d+(?:\.\d+)?)\s*(\w+)\s*$/.exec(text) ?? [];
        return Math.floor(Number(amount) * (byteUnits[unit.toLowerCase()] ?? 1));
      })
      .pipe(z.int().positive()),
  ],
  { error: byteCountError },
);

const mcpServerObject = z.strictObject({
  /** stdio: the program to start (found on PATH, or a path). */
  command: z.string().min(1).optional(),
  args: z.array(z.string()).optional(),
  /** stdio: variables added to the few the server inherits (HOME, PATH, SHELL, TERM, USER, LOGNAME). */
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), valueOrSecret).optional(),
  /** stdio: the folder the server starts in; relative to config.yaml's folder. */
  cwd: z.string().min(1).optional(),
  /** Streamable HTTP: the server's endpoint. */
  url: z
    .url({ protocol: /^https?$/, error: 'expected an http(s) URL such as http://127.0.0.1:3001/mcp' })
    .superRefine(
      refuseUrlCredentials(
        'remove `user:password@` from the URL; send the credential in `headers:`, e.g. `Authorization: !secret mcp_auth`',
      ),
    )
    .optional(),
  headers: z.record(z.string().regex(/^[A-Za-z0-9-]+$/), valueOrSecret).optional(),
  /** Which of the server's tools are offered at all. */
  allow: z.array(toolPattern).default(['*']),
  /** Tools never offered, even when `allow` matches them. */
  deny: z.array(toolPattern).default([]),
  /** Tools taken as read-only beyond those the server annotates `readOnlyHint: true`. */
  read_only: z.array(toolPattern).default([]),
  /** How long one tool call may take. */
  timeout: durationSchema.default(60_000),
  /**
   * Whether the server's own tool annotations (`readOnlyHint`) may make a tool read-only. False: only `read_only`
   * does; every other tool is irreversible whatever the server says.
   */
  trust_annotations: z.boolean({ error: 'expected true or false' }).default(true),
  /** The largest single message (a tool's answer) read from the server; a larger one fails its call. */
  max_response_bytes: byteCountSchema.default(defaultMaxResponseBytes),
});

/** The parts of an MCP server's config both transports share. */
interface McpServerCommon {
  allow: string[];
  deny: string[];
  readOnly: string[];
  timeoutMs: number;
  /** Whether `readOnlyHint` may make a tool read-only (config's `trust_annotations`). */
  trustAnnotations: boolean;
  /** The largest message read from the server, in bytes (config's `max_response_bytes`). */
  maxResponseBytes: number;
}

/** A server started as a child process, spoken to over its stdin and stdout. */
export interface McpStdioServerConfig extends McpServerCommon {
  transport: 'stdio';
  command: string;
  args: string[];
  env: Record<string, string | Secret>;
  /** As written; loadConfig resolves it against config.yaml's folder. */
  cwd?: string;
}

/** A server reached over streamable HTTP. */
export interface McpHttpServerConfig extends McpServerCommon {
  transport: 'http';
  url: string;
  headers: Record<string, string | Secret>;
}

export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

/** One entry of `mcp_servers:`, normalised to a {@link McpServerConfig}. */
export const mcpServerSchema = mcpServerObject
  .superRefine((value, context) => {
    if ((value.command === undefined) === (value.url === undefined)) {
      context.addIssue({
        code: 'custom',
        message: 'an MCP server has exactly one of `command:` (stdio) or `url:` (streamable HTTP)',
      });
      return;
    }
    const wrong = value.url === undefined ? (['headers'] as const) : (['args', 'env', 'cwd'] as const);
    for (const key of wrong) {
      if (value[key] !== undefined) {
        context.addIssue({
          code: 'custom',
          path: [key],
          message:
            value.url === undefined
              ? '`headers:` is for servers reached by `url:`; a `command:` server gets `env:` instead'
              : `\`${key}:\` is for servers started by \`command:\`; a \`url:\` server takes \`headers:\``,
        });
      }
    }
  })
  .transform((value): McpServerConfig => {
    const common = {
      allow: value.allow,
      deny: value.deny,
      readOnly: value.read_only,
      timeoutMs: value.timeout,
      trustAnnotations: value.trust_annotations,
      maxResponseBytes: value.max_response_bytes,
    };
    if (value.url !== undefined) return { transport: 'http', url: value.url, headers: value.headers ?? {}, ...common };
    return {
      transport: 'stdio',
      command: value.command ?? '',
      args: value.args ?? [],
      env: value.env ?? {},
      ...(value.cwd === undefined ? {} : { cwd: value.cwd }),
      ...common,
    };
  });
