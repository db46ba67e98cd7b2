import path from 'node:path';
import {
  type HandlerContext,
  runScript,
  SandboxUnavailableError,
  ScriptTimeoutError,
  UnrecoverableError,
} from '@assistant/sdk';
import * as z from 'zod';

const payloadSchema = z.looseObject({
  script: z.string().min(1),
  inputs: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).default({}),
});

/**
 * `script.run`: runs one of config.yaml's scripts. Its log helpers reach the human log (`log_human`) and the worker
 * log (`log_info`, `log_warn`); what it writes to `$ASSISTANT_RESULT_FILE` becomes the task's result. A timeout kills
 * its whole process group and is retried like any timeout; a non-zero exit fails the attempt. When bubblewrap does
 * not work here (runScript tries it before every run until a trial works), the task fails for good without running
 * anything, unless the owner chose `worker.sandbox: none`.
 */
export async function runScriptTask(context: HandlerContext) {
  const checked = payloadSchema.safeParse(context.payload);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new UnrecoverableError(
      `script.run expects {"script": "name", "inputs": {...}}; ${issue?.path.join('.') || 'payload'}: ${issue?.message}`,
    );
  }
  const { script: name, inputs } = checked.data;
  if (!context.scripts) throw new UnrecoverableError('script.run runs only as the builtin script integration');
  const { scripts, workRoot, privatePaths, sandbox } = context.scripts;
  const script = scripts[name];
  if (!script) {
    const known = Object.keys(scripts);
    throw new UnrecoverableError(
      `no script \`${name}\` under \`scripts:\` in config.yaml${known.length > 0 ? ` (there are: ${known.join(', ')})` : ''}`,
    );
  }
  const logs: Promise<void>[] = [];
  try {
    const run = await runScript({
      name,
      script,
      inputs,
      configDir: context.configDir,
      workDir: path.join(workRoot, name),
      signal: context.signal,
      sandbox: sandbox.mode,
      ...(sandbox.mode === 'bubblewrap' && sandbox.bubblewrapPath !== undefined
        ? { bubblewrapPath: sandbox.bubblewrapPath }
        : {}),
      privatePaths: [...privatePaths],
      onLog: (level, message) => {
        if (level === 'human') logs.push(context.log.human(message, { source: `script/${name}` }).catch(() => {}));
        else context.log[level](message, { script: name });
      },
    });
    return { result: run.result, exit_code: run.exitCode, sandbox: run.sandbox, duration_ms: run.durationMs };
  } catch (error) {
    // runScript tried bubblewrap (again, if an earlier trial failed) before running anything.
    if (error instanceof SandboxUnavailableError) throw new UnrecoverableError(error.message);
    // An input the script does not declare fails the same way on every attempt.
    if (
      error instanceof Error &&
      !(error instanceof ScriptTimeoutError) &&
      /does not declare|not declared/.test(error.message)
    ) {
      throw new UnrecoverableError(error.message);
    }
    throw error;
  } finally {
    await Promise.all(logs);
  }
}
