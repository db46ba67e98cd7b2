// The `assistant` command: `node apps/cli/src/main.ts <command>`, or through bin/assistant.js.
import { runCli } from './run-cli.ts';

// exitCode rather than process.exit(): piped stdout is flushed before the process ends on its own.
process.exitCode = await runCli({ argv: process.argv.slice(2) });
