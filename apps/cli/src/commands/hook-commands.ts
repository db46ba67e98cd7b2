import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { AssistantError } from '@assistant/errors';
import { type EventRecord, openEventLedger } from '@assistant/events';
import {
  askHook,
  dryRunHook,
  dryRunJson,
  eventForTest,
  fileAskCache,
  formatDryRun,
  type HookState,
  hookStateJson,
  readHookStates,
} from '@assistant/hooks';
import type { CliContext } from '../cli-context.ts';
import { formatLocalTime } from '../format-local-time.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';
import { writeJson } from '../open-cli-queue.ts';

export interface HooksListOptions {
  globals: GlobalOptions;
  context: CliContext;
  json?: boolean | undefined;
}

export interface HooksTestOptions {
  globals: GlobalOptions;
  context: CliContext;
  hook: string;
  /** An event id (`ev-…`) the ledger holds, or a JSON file of an event (`{type, data}`, or a ledger line). */
  event: string;
  /** Call the model for the slow path (`ask:`); otherwise it is reported as not asked. */
  ask?: boolean | undefined;
  json?: boolean | undefined;
}

/** What `hooks ls` says of a hook's state, in one word. */
function stateWord(state: HookState): string {
  if (state.firedOnce) return 'fired-once';
  return state.enabled ? 'enabled' : 'disabled';
}

/** `assistant hooks ls [--json]`: each hook with its state, last firing, breaker, pending timers and missed runs. */
export async function hooksListCommand(options: HooksListOptions): Promise<void> {
  const { context } = options;
  const { config, hooks } = await loadCliConfig(options);
  const states = await readHookStates({ dataDir: config.paths.dataDir, hooks });
  if (options.json) return writeJson(context, { hooks: states.map(hookStateJson) });
  if (states.length === 0) {
    context.stderr.write('no hooks: add files to hooks/ beside config.yaml (docs/hooks.md)\n');
    return;
  }
  for (const state of states) {
    const breaker =
      state.breaker.state === 'closed'
        ? 'closed'
        : `${state.breaker.state.toUpperCase()} after ${state.breaker.failures} errors${state.breaker.openedAt ? ` since ${formatLocalTime(new Date(state.breaker.openedAt))}` : ''}`;
    const timers =
      state.timers.length === 0
        ? 'none'
        : state.timers.map((timer) => `${timer.kind} due ${formatLocalTime(new Date(timer.dueAt))}`).join(', ');
    context.stdout.write(
      `${state.name}  on ${state.on}  ${stateWord(state)}${state.once && !state.firedOnce ? ' (once)' : ''}\n` +
        `  last fired: ${state.lastFiredAt ? formatLocalTime(new Date(state.lastFiredAt)) : 'never'} (${state.firings} firings)\n` +
        `  breaker: ${breaker}\n` +
        `  timers pending: ${timers}\n` +
        `  missed: ${state.missed}\n`,
    );
  }
}

/**
 * `assistant hooks test HOOK --event FILE|ID [--ask] [--json]`: a dry run. The fast path with the value each check
 * saw, the slow path (the model only with `--ask`), and each action it would take with whether it waits for approval.
 * Nothing is enqueued, recorded or fired; only `--ask` writes, and only the ask cache (as the runner would).
 */
export async function hooksTestCommand(options: HooksTestOptions): Promise<void> {
  const { context } = options;
  const { config, hooks, integrations } = await loadCliConfig(options);
  const hook = hooks.find((candidate) => candidate.name === options.hook);
  if (!hook) {
    const known = hooks.map((candidate) => candidate.name);
    throw new AssistantError(
      'USAGE',
      `no hook \`${options.hook}\`; ${known.length === 0 ? 'no hooks are loaded (hooks/ beside config.yaml)' : `the hooks are ${known.join(', ')}`}`,
    );
  }
  const ledger = openEventLedger({
    dataDir: config.paths.dataDir,
    manifests: integrations.map((integration) => ({
      name: integration.manifest.domain,
      events: integration.manifest.events,
    })),
  });
  let event: EventRecord;
  if (/^ev-[0-9a-f]{20}$/.test(options.event)) {
    const stored = await ledger.get(options.event);
    if (!stored) {
      throw new AssistantError('HOOK_TEST_EVENT_INVALID', `no event ${options.event} in the ledger (data/events/)`, {
        hint: '`assistant events ls` lists the stored events with their ids',
      });
    }
    const { cursor: _cursor, ...rest } = stored;
    event = rest;
  } else {
    const file = path.resolve(context.cwd, options.event);
    let input: unknown;
    try {
      input = JSON.parse(await readFile(file, 'utf8'));
    } catch (error) {
      throw new AssistantError(
        'HOOK_TEST_EVENT_INVALID',
        `--event ${options.event}: neither an event id (ev- and 20 hex digits) nor a readable JSON file: ${(error as Error).message}`,
      );
    }
    event = eventForTest({ input, registry: ledger.registry });
  }
  let llm: ReturnType<typeof import('@assistant/llm').createLlmProfiles> | undefined;
  if (options.ask && hook.ask) {
    const { createLlmProfiles } = await import('@assistant/llm');
    llm = createLlmProfiles({ config });
  }
  const run = await dryRunHook({
    hook,
    event,
    ...(llm
      ? {
          ask: ({ hook: asked, event: about }) =>
            askHook({
              hook: asked,
              event: about,
              model: (llm as NonNullable<typeof llm>)(asked.ask?.llm),
              cache: fileAskCache({ dataDir: config.paths.dataDir }),
            }),
        }
      : {}),
  });
  if (options.json) return writeJson(context, dryRunJson(run));
  context.stdout.write(formatDryRun(run));
}
