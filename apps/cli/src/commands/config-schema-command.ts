import { configJsonSchema } from '@assistant/config';
import type { CliContext } from '../cli-context.ts';

export function configSchemaCommand(context: CliContext): void {
  context.stdout.write(`${JSON.stringify(configJsonSchema(), null, 2)}\n`);
}
