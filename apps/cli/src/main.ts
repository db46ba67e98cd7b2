// The `assistant` command: `node apps/cli/src/main.ts <command>`, or through bin/assistant.js.
import { runCli } from './run-cli.ts';

// Belt and braces behind the explicit 0600/0700 modes at every write: anything this process or its children create
// (a handler that forgets a mode, a script's output) is the owner's alone. Data holds mail and transcripts.
process.umask(0o077);

// exitCode rather than process.exit(): piped stdout is flushed before the process ends on its own.
process.exitCode = await runCli({ argv: process.argv.slice(2) });
