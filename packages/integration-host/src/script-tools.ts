import path from 'node:path';
import { defineTool, type Tool } from '@assistant/agent';
import { runScript } from '@assistant/sandbox';
import * as z from 'zod';
import type { ScriptsContext } from './handler-context.ts';

/** Options of {@link scriptTools}. */
export interface ScriptToolsOptions extends ScriptsContext {
  /** The folder of config.yaml: `node:` paths resolve against it. */
  configDir: string;
  /** A line a script logs through its helpers (`log_human`, `log_info`, `log_warn`). */
  onLog?: (script: string, level: 'human' | 'info' | 'warn', message: string) => void;
}

/**
 * The owner's scripts (config.yaml's `scripts:`) as tools a code cell can call: `script_<name>`, at
 * `tools.scripts.<name>({input: value})`, described by the script's `description` and taking its declared `inputs`.
 * A script that is not `reversible: true` is `irreversible`, so a call waits for the owner's approval unless
 * config.yaml's `tools:` allows it; a reversible one is `soft`. It runs as a `script.run` task runs it: in the script
 * sandbox (`worker.sandbox`), in its own work folder, killed with its process group at its `timeout` or when the cell
 * ends. Its result (what it writes to `$ASSISTANT_RESULT_FILE`) is text from outside: fenced like any tool's.
 */
export function scriptTools(options: ScriptToolsOptions): Tool[] {
  return Object.entries(options.scripts).map(([name, script]) => {
    const value = z.union([z.string().max(10_000), z.number(), z.boolean()]);
    const shape = Object.fromEntries(script.inputs.map((input) => [input, value.optional()]));
    const about = script.description ?? `the owner's script ${name}`;
    return defineTool({
      name: `script_${name}`,
      description: `Runs the owner's script ${name}: ${about}.${script.inputs.length > 0 ? ` Inputs: ${script.inputs.join(', ')}.` : ''}`,
      input: z.strictObject(shape),
      tier: script.reversible ? 'soft' : 'irreversible',
      codePath: ['scripts', name],
      run: async (inputs, context) => {
        const given = Object.fromEntries(
          Object.entries(inputs).filter(
            (entry): entry is [string, string | number | boolean] => entry[1] !== undefined,
          ),
        );
        const run = await runScript({
          name,
          script,
          inputs: given,
          configDir: options.configDir,
          workDir: path.join(options.workRoot, name),
          signal: context.signal,
          sandbox: options.sandbox.mode,
          ...(options.sandbox.mode === 'bubblewrap' && options.sandbox.bubblewrapPath !== undefined
            ? { bubblewrapPath: options.sandbox.bubblewrapPath }
            : {}),
          privatePaths: [...options.privatePaths],
          onLog: (level, message) => options.onLog?.(name, level, message),
        });
        return { result: run.result, exit_code: run.exitCode };
      },
    });
  });
}
