// The `assistant` command: `node apps/cli/src/main.ts <command>`, or through bin/assistant.js.
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

// Belt and braces behind the explicit 0600/0700 modes at every write: anything this process or its children create
// (a handler that forgets a mode, a script's output) is the owner's alone. Data holds mail and transcripts.
process.umask(0o077);

const argv = process.argv.slice(2);
// `assistant start` stays up as long as the assistant does: it becomes the plain-JavaScript supervisor (same pid),
// leaving behind commander, the config loader and Node's TypeScript stripper. Only Node's own modules load first.
const { plainStartArguments } = await import('./start-supervisor.js');
if (plainStartArguments(argv) !== undefined && typeof process.execve === 'function') {
  const supervisor = fileURLToPath(new URL('./start-supervisor.js', import.meta.url));
  process.execve(process.execPath, [process.execPath, ...process.execArgv, supervisor, ...argv], process.env);
}

// `assistant work` and `assistant serve` stay up: they restart themselves with the heap flags, their TypeScript from
// the stripped cache and fewer malloc arenas, before the modules they run load (@assistant/process's lean-start.ts
// says what each buys).
// Any other command runs and exits: it opens Node's compile cache, so that the files it loads are not stripped of
// their types again on every run.
const { leanStart, openCompileCache } = await import('@assistant/process/lean-start');
if (longLivedCommandLine(argv)) leanStart();
else openCompileCache();

const { runCli } = await import('./run-cli.ts');
// exitCode rather than process.exit(): piped stdout is flushed before the process ends on its own.
process.exitCode = await runCli({ argv });

/** Whether the command line runs `assistant work` or `serve`, global options and all; a wrong one is runCli's to explain. */
function longLivedCommandLine(args: readonly string[]): boolean {
  try {
    const { positionals } = parseArgs({
      args: [...args],
      options: { config: { type: 'string' }, data: { type: 'string' } },
      allowPositionals: true,
      strict: false,
    });
    return positionals[0] === 'work' || positionals[0] === 'serve';
  } catch {
    return false;
  }
}
