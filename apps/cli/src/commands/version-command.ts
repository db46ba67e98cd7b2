import { assistantVersion } from '@assistant/process';
import type { CliContext } from '../cli-context.ts';

/** `assistant 0.1.0 (node v24.21.0)`: the node version matters because the bin may re-run under another one. */
export function versionCommand(context: CliContext): void {
  context.stdout.write(`assistant ${assistantVersion} (node ${process.version})\n`);
}
