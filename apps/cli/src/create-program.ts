import { Command } from 'commander';
import type { CliContext } from './cli-context.ts';
import { configCheckCommand } from './commands/config-check-command.ts';
import { configSchemaCommand } from './commands/config-schema-command.ts';
import { doctorCommand } from './commands/doctor-command.ts';
import { serveCommand } from './commands/serve-command.ts';
import { startCommand } from './commands/start-command.ts';
import { versionCommand } from './commands/version-command.ts';
import { workCommand } from './commands/work-command.ts';
import { globalOptions } from './global-options.ts';

export interface CliProgram {
  program: Command;
  /** The exit code the last command asked for (doctor exits 1 on a FAIL without throwing). */
  exitCode(): number;
}

/** The `assistant` command line. Errors are thrown, never printed or exited on here: runCli does both. */
export function createProgram(context: CliContext): CliProgram {
  let exitCode = 0;
  const program = new Command('assistant')
    .description('A personal AI back office: a filesystem queue, markdown notes, LLM classification and your rules.')
    .option('--config <file>', 'the config file (default: $ASSISTANT_CONFIG, else ./config.yaml)')
    .option('--data <dir>', "the data directory (default: $ASSISTANT_DATA, else the config's data_dir)")
    .exitOverride()
    .showSuggestionAfterError(true)
    .configureOutput({
      writeOut: (text) => context.stdout.write(text),
      writeErr: (text) => context.stderr.write(text),
      // runCli prints the error in the CLI's own `assistant: …` + `hint: …` form.
      outputError: () => {},
    });

  program
    .command('start')
    .description('run the server and the worker until Ctrl-C; stop both if either dies')
    .action(async (_options, command: Command) => startCommand({ globals: globalOptions(command, context), context }));
  program
    .command('serve')
    .description('run only the server, in this process')
    .action(async (_options, command: Command) => serveCommand({ globals: globalOptions(command, context), context }));
  program
    .command('work')
    .description('run only the worker, in this process')
    .action(async (_options, command: Command) => workCommand({ globals: globalOptions(command, context), context }));

  const config = program.command('config').description('check the configuration or print its schema');
  config
    .command('check')
    .description('validate config.yaml and secrets.yaml and summarise them')
    .action(async (_options, command: Command) =>
      configCheckCommand({ globals: globalOptions(command, context), context }),
    );
  config
    .command('schema')
    .description('print a JSON Schema of config.yaml for editor completion')
    .action(() => configSchemaCommand(context));

  program
    .command('doctor')
    .description('check config, data directories, LLM endpoints and credentials')
    .action(async (_options, command: Command) => {
      exitCode = await doctorCommand({ globals: globalOptions(command, context), context });
    });
  program
    .command('version')
    .description('print the version')
    .action(() => versionCommand(context));

  return { program, exitCode: () => exitCode };
}
