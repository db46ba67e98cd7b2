export type { CliContext, TextOutput } from './cli-context.ts';
export { type CliProgram, createProgram } from './create-program.ts';
export { type RunCliOptions, runCli } from './run-cli.ts';
export { type RestartEvent, superviseProcesses } from './start-supervisor.js';
