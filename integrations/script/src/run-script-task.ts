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
 * its whole process group and is retried like any timeout; a non-zero exit fails the attempt. When the worker found
 * at start that bubblewrap does not work here, the task fails for good without running anything, unless the owner
 * chose `worker.sandbox: none`.
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
  const script = context.config.scripts[name];
  if (!script) {
    const known = Object.keys(context.config.scripts);
    throw new UnrecoverableError(
      `no script \`${name}\` under \`scripts:\` in config.yaml${known.length > 0 ? ` (there are: ${known.join(', ')})` : ''}`,
    );
  }
  const sandbox = context.scriptSandbox;
  if (sandbox.mode === 'bubblewrap' && !sandbox.status.usable) {
    throw new UnrecoverableError(
      new SandboxUnavailableError({ scriptName: name, problem: sandbox.status.problem }).message,
    );
  }
  const { paths } = context.config;
  const logs: Promise<void>[] = [];
  try {
    const run = await runScript({
      name,
      script,
      inputs,
      configDir: path.dirname(paths.configFile),
      workDir: path.join(paths.dataDir, 'scripts', name),
      signal: context.signal,
      sandbox: sandbox.mode,
      ...(sandbox.mode === 'bubblewrap' ? { bubblewrapPath: sandbox.bubblewrapPath } : {}),
      // Never mounted; they keep a node script's folder from being shown when it holds one of them.
      privatePaths: [
        paths.configFile,
        paths.secretsFile,
        paths.dataDir,
        paths.queue,
        paths.notes,
        paths.logs,
        paths.control,
        path.resolve(path.dirname(paths.configFile), context.config.llmCache.directory),
      ],
      onLog: (level, message) => {
        if (level === 'human') logs.push(context.log.human(message, { source: `script/${name}` }).catch(() => {}));
        else context.log[level](message, { script: name });
      },
    });
    return { result: run.result, exit_code: run.exitCode, sandbox: run.sandbox, duration_ms: run.durationMs };
  } catch (error) {
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
