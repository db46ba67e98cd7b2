import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { EventRecord } from '@assistant/events';
import { type ChatModel, Conversation, fenceUntrusted } from '@assistant/llm';
import * as z from 'zod';
import type { HookVerdict } from './decide-hook.ts';
import type { CompiledHook } from './hook-types.ts';

/** The typed verdict the model gives: structured output, validated, retried on a malformed answer. */
export const hookVerdictSchema = z.strictObject({
  fire: z.boolean().describe('true when the hook should fire for this event'),
  reason: z.string().min(1).max(500).describe('one sentence saying why'),
});

/** Where verdicts are kept: one file per hook version and event, so a replay of the same event never asks again. */
export interface AskCache {
  get(key: { version: string; event: string }): Promise<{ fire: boolean; reason: string } | undefined>;
  set(
    key: { version: string; event: string },
    verdict: { fire: boolean; reason: string; model?: string },
  ): Promise<void>;
}

/** The folder of the cache under the data directory. */
export const askCacheFolder = path.join('hooks', 'ask-cache');

const cachedSchema = z.looseObject({ fire: z.boolean(), reason: z.string() });

/**
 * The file cache: `data/hooks/ask-cache/<hook version>/<event id>.json`, written to a temporary file, fsynced and
 * renamed, so a crash leaves the old answer or the new one, never half of one. A file that does not parse is asked
 * again (and rewritten).
 */
export function fileAskCache(options: { dataDir: string }): AskCache {
  const root = path.join(options.dataDir, askCacheFolder);
  const fileOf = (key: { version: string; event: string }) =>
    path.join(root, safeName(key.version), `${safeName(key.event)}.json`);
  return {
    async get(key) {
      let text: string;
      try {
        text = await readFile(fileOf(key), 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
      try {
        const parsed = cachedSchema.safeParse(JSON.parse(text));
        return parsed.success ? { fire: parsed.data.fire, reason: parsed.data.reason } : undefined;
      } catch {
        return undefined;
      }
    },
    async set(key, verdict) {
      const file = fileOf(key);
      await mkdir(path.dirname(file), { recursive: true });
      const temporary = `${file}.${randomBytes(6).toString('hex')}.tmp`;
      const handle = await open(temporary, 'wx');
      try {
        await handle.writeFile(
          `${JSON.stringify({ ...verdict, version: key.version, event: key.event, at: new Date().toISOString() })}\n`,
        );
        await handle.sync();
      } finally {
        await handle.close();
      }
      try {
        await rename(temporary, file);
      } catch (error) {
        await rm(temporary, { force: true });
        throw error;
      }
    },
  };
}

/** Event ids (`ev-…`) and versions (hex) are safe file names; anything else is hashed, never used as a path. */
function safeName(name: string): string {
  return /^[A-Za-z0-9_-]{1,80}$/.test(name) ? name : createHash('sha256').update(name).digest('hex').slice(0, 32);
}

export interface AskHookOptions {
  hook: CompiledHook;
  event: EventRecord;
  /** The model of the hook's `ask.llm` profile (or `default`). */
  model: ChatModel;
  cache: AskCache;
  signal?: AbortSignal;
  /** For tests: the fence's marker. */
  nonce?: string;
}

/**
 * The slow path: the hook's question over the event, every value an outsider wrote fenced as untrusted (the same
 * `fenceUntrusted` mail is classified with), answered as `{fire, reason}` through structured output. The verdict
 * is cached per hook version and event id: the same event (a replay, a `for:` re-check, a restart) is never asked
 * twice, and a changed hook is asked afresh.
 */
export async function askHook(options: AskHookOptions): Promise<HookVerdict> {
  const { hook, event } = options;
  if (!hook.ask) throw new Error(`hook ${hook.name} has no \`ask:\``);
  const key = { version: hook.version, event: event.id };
  const cached = await options.cache.get(key);
  if (cached) return { ...cached, cached: true };
  const prompt = hookPrompt({ hook, event, ...(options.nonce === undefined ? {} : { nonce: options.nonce }) });
  const conversation = new Conversation(options.model, { system: prompt.system });
  const verdict = await conversation.structured(hookVerdictSchema, prompt.user, {
    name: 'hook_verdict',
    ...(options.signal ? { signal: options.signal } : {}),
  });
  await options.cache.set(key, { ...verdict, ...(options.model.model ? { model: options.model.model } : {}) });
  return { ...verdict, cached: false };
}

/** The messages of the slow path: the owner's question and the event's own facts unfenced, the rest fenced. */
export function hookPrompt(options: { hook: CompiledHook; event: EventRecord; nonce?: string }): {
  system: string;
  user: string;
} {
  const { hook, event } = options;
  const trusted = new Set(hook.trustedFields ?? []);
  const facts: string[] = [`type: ${event.type}`, `at: ${event.at}`, `source: ${event.source}`];
  const untrusted: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.data)) {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    if (trusted.has(name)) facts.push(`${name}: ${text}`);
    else untrusted[name] = text;
  }
  const fenced = fenceUntrusted(untrusted, options.nonce === undefined ? {} : { nonce: options.nonce });
  return {
    system: `You decide whether one of the owner's hooks should fire for an event. Answer the owner's question about the event with fire true or false and a one-sentence reason. ${fenced.instruction}`,
    user: [
      `The owner's question: ${hook.ask?.question ?? ''}`,
      '',
      'The event, as Assistant recorded it:',
      ...facts.map((fact) => `- ${fact}`),
      ...(fenced.text === '' ? [] : ['', 'Its fields written by others:', fenced.text]),
    ].join('\n'),
  };
}
