import { AssistantError } from '@assistant/errors';
import { describePause, FileNoteStore, findPause, PauseStore } from '@assistant/notes';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { openCliRuntime, writeJson } from '../open-cli-queue.ts';

export interface TriggerCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
  /** The integration instance's name from config.yaml. */
  integration: string;
  platform: string;
  json?: boolean;
}

/**
 * Enqueues a platform's entry task now, as its schedule would but without the policies: a person asked for it.
 * Prints the new task's id.
 */
export async function triggerCommand(options: TriggerCommandOptions): Promise<void> {
  const { context } = options;
  const { queue, registry, config } = await openCliRuntime(options);
  const entry = registry.entryTask(options.integration, options.platform);
  if (!entry.ok) {
    throw new AssistantError('USAGE', entry.message, {
      hint:
        entry.status === 409
          ? 'set `enabled: true` in config.yaml first'
          : 'instances are the `name:`s under `integrations:` in config.yaml; `assistant config check` lists them',
    });
  }
  const outcome = await queue.enqueue({
    type: entry.type,
    payload: entry.payload,
    priority: entry.priority,
    integration: entry.integration,
    source: 'cli',
  });
  if (outcome.status !== 'enqueued') throw new Error(`unexpected ${outcome.status}: manual triggers bypass policies`);
  // The task is enqueued all the same (it runs once the instance is resumed); stdout stays the id alone, for scripts.
  const pauses = await new PauseStore({ notes: new FileNoteStore({ root: config.paths.notes }) })
    .read()
    .catch(() => undefined);
  const paused = pauses && findPause(pauses, 'instance', entry.integration ?? options.integration);
  if (paused) {
    context.stderr.write(
      `note: instance ${paused.name} is ${describePause(paused)}; the task waits in pending/ until \`assistant resume instance ${paused.name}\`\n`,
    );
  }
  if (options.json) {
    writeJson(context, { id: outcome.task.id, type: entry.type, state: 'pending', path: outcome.location });
  } else {
    context.stdout.write(`${outcome.task.id}\n`);
  }
}
