import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { readWorkflowRun, startWorkflowRun } from '@assistant/agents';
import { parseDuration } from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import { FileNoteStore } from '@assistant/notes';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { openCliRuntime, writeJson } from '../open-cli-queue.ts';

export interface RunCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
  workflow: string;
  input: string;
  /** Follow the run to its end and print its output. */
  wait?: boolean | undefined;
  /** With `wait`: give up following after this long (the run goes on). */
  timeout?: string | undefined;
  json?: boolean | undefined;
}

/** How often `--wait` looks at the run's task: a person is waiting, a model step takes seconds. */
const followIntervalMs = 250;

/**
 * `assistant run WORKFLOW --input TEXT [--wait]`: checks the workflow and enqueues its run (`system.workflow`), then
 * prints the run id and the task id; with `--wait`, follows the run to its end and prints its output. Returns the exit
 * code: 0, or 1 for a run that ended failed (or a task that failed).
 */
export async function runCommand(options: RunCommandOptions): Promise<number> {
  const { context } = options;
  let timeoutMs: number | undefined;
  if (options.timeout !== undefined) {
    timeoutMs = parseDuration(options.timeout);
    if (timeoutMs === undefined) {
      throw new AssistantError('USAGE', `--timeout \`${options.timeout}\` is not a duration`, {
        hint: 'e.g. 90s, 10m',
      });
    }
  }
  const { queue, config } = await openCliRuntime(options);
  const started = await startWorkflowRun({
    queue,
    configDir: path.dirname(config.paths.configFile),
    notesRoot: config.paths.notes,
    workflow: options.workflow,
    input: options.input,
    source: 'cli',
  });
  if (!options.wait) {
    if (options.json) writeJson(context, { run: started.run, task: started.task });
    else {
      context.stdout.write(
        `run ${started.run}, task ${started.task}\n  follow it: assistant task watch ${started.task}; its note: notes/agents/runs/${started.run}.md\n`,
      );
    }
    return 0;
  }
  if (!options.json) context.stdout.write(`run ${started.run}, task ${started.task}\n`);
  const deadline = timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeoutMs;
  for (;;) {
    const record = await queue.get(started.task);
    if (record?.state === 'done' || record?.state === 'failed') {
      const result = record.task?.result as { status?: string; output?: string; reason?: string } | undefined;
      const note = await readWorkflowRun({ notes: new FileNoteStore({ root: config.paths.notes }), run: started.run });
      const failed = record.state === 'failed' || result?.status !== 'done';
      const reason =
        record.state === 'failed'
          ? (record.task?.error?.message ?? record.problem ?? 'the task failed')
          : result?.reason;
      if (options.json) {
        writeJson(context, {
          run: started.run,
          task: started.task,
          status: failed ? 'failed' : 'done',
          output: result?.output ?? note?.output ?? '',
          ...(reason ? { reason } : {}),
        });
      } else if (failed) context.stderr.write(`run ${started.run} failed: ${reason ?? 'no reason given'}\n`);
      else context.stdout.write(`${result?.output ?? note?.output ?? ''}\n`);
      return failed ? 1 : 0;
    }
    if (Date.now() >= deadline) {
      context.stderr.write(
        `run ${started.run} is still running after ${options.timeout}; follow it with assistant task watch ${started.task}\n`,
      );
      return 1;
    }
    await sleep(followIntervalMs);
  }
}
