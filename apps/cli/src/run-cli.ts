import { scrubSecrets } from '@assistant/errors';
import { type CliContext, processContext } from './cli-context.ts';
import { createProgram } from './create-program.ts';
import { closeCliQueues } from './open-cli-queue.ts';
import { reportError } from './report-error.ts';

export interface RunCliOptions {
  /** The arguments after `assistant`. */
  argv: readonly string[];
  /** @default the real process's streams, environment and working directory */
  context?: CliContext;
}

/** Runs one command line and resolves to its exit code; every error becomes `assistant: …` lines on stderr. */
export async function runCli(options: RunCliOptions): Promise<number> {
  const context = options.context ?? processContext();
  const { program, exitCode } = createProgram(context);
  try {
    await program.parseAsync([...options.argv], { from: 'user' });
    return exitCode();
  } catch (error) {
    const report = reportError(error);
    // An error can quote an upstream answer that echoes a loaded secret.
    for (const line of report.lines) context.stderr.write(`${scrubSecrets(line)}\n`);
    return report.exitCode;
  } finally {
    await closeCliQueues();
  }
}
