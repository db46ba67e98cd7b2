import { AssistantError } from '@assistant/errors';
import { Command, InvalidArgumentError, Option } from 'commander';
import type { CliContext } from './cli-context.ts';
import { globalOptions } from './global-options.ts';

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function integerOption(flag: string, value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) {
    throw new InvalidArgumentError(`${flag} expects a whole number, got \`${value}\``);
  }
  return parsed;
}

/** A `--limit` value: a positive whole number, or a USAGE error naming what was given. */
function positiveLimit(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) {
    throw new AssistantError('USAGE', `--limit must be a positive whole number, got \`${value}\``);
  }
  return parsed;
}

export interface CliProgram {
  program: Command;
  /** The exit code the last command asked for (doctor exits 1 on a FAIL without throwing). */
  exitCode(): number;
}

// Each command's module is imported when that command runs, not when the command line is built: `assistant work` is
// the worker, which stays up, and would otherwise hold the server (fastify and its routes), the MCP server and the
// chat console for the whole of its life, about 10 MB it never uses (docs/performance.md, issue 20).

/** The `assistant` command line. Errors are thrown, never printed or exited on here: runCli does both. */
const steeringActionsText =
  'pause, resume, stop [reason], interject MESSAGE, ask QUESTION, answer CLARIFICATION-ID TEXT';

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
    .description('run the server and the worker until Ctrl-C; start one that dies again')
    // How the lean supervisor checks the config in a child: warnings and errors as usual, then one JSON line.
    .addOption(new Option('--preflight').hideHelp())
    // What the supervisor runs in the background once both are started: one warning per unreachable LLM profile.
    .addOption(new Option('--probe-models').hideHelp())
    .option('--verbose', 'log a line per task (debug level) instead of a summary per batch')
    .action(async (options: { preflight?: boolean; probeModels?: boolean; verbose?: boolean }, command: Command) => {
      const { probeModels, ...rest } = options;
      if (probeModels) {
        return (await import('./commands/start-model-probe.ts')).startModelProbeCommand({
          globals: globalOptions(command, context),
          context,
        });
      }
      return (await import('./commands/start-command.ts')).startCommand({
        globals: globalOptions(command, context),
        context,
        ...rest,
      });
    });
  program
    .command('serve')
    .description('run only the server, in this process')
    .action(async (_options, command: Command) =>
      (await import('./commands/serve-command.ts')).serveCommand({ globals: globalOptions(command, context), context }),
    );
  program
    .command('token')
    .description('print the API token (data/api-token, or server.token), for `Authorization: Bearer …`')
    .option('--path', 'print the file the token is kept in instead')
    .action(async (options: { path?: boolean }, command: Command) =>
      (await import('./commands/token-command.ts')).tokenCommand({
        globals: globalOptions(command, context),
        context,
        ...options,
      }),
    );
  program
    .command('work')
    .description('run only the worker, in this process')
    .option('--concurrency <n>', 'tasks to run at once (default: worker.concurrency)')
    .option('--exit-when-idle', 'exit 0 once no task is ready or active')
    .option('--types <patterns>', 'take only these task types, comma-separated, `*` allowed (e.g. email.*.classify)')
    .option(
      '--server <url>',
      "run on another machine: notes, log and steering through this server's API (token in ASSISTANT_TOKEN)",
    )
    .action(
      async (
        options: { concurrency?: string; exitWhenIdle?: boolean; types?: string; server?: string },
        command: Command,
      ) =>
        (await import('./commands/work-command.ts')).workCommand({
          globals: globalOptions(command, context),
          context,
          ...options,
        }),
    );

  program
    .command('enqueue')
    .description('add a task by hand (no dedup or rate limits) and print its id')
    .argument('<type>', 'the task type, e.g. system.echo')
    .option('--payload <json>', 'the payload as JSON, or @file to read it from a file')
    .option('--priority <n>', 'a digit 0-9, lower runs first (default 5)')
    .option('--delay <duration>', 'run no sooner than this from now, e.g. 10m')
    .option('--json', 'print the outcome as JSON')
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        `  assistant enqueue system.echo --payload '{"hello": "world"}'`,
        '  assistant enqueue system.sleep --payload @sleep.json --priority 1 --delay 10m',
      ].join('\n'),
    )
    .action(
      async (
        type: string,
        options: { payload?: string; priority?: string; delay?: string; json?: boolean },
        command: Command,
      ) =>
        (await import('./commands/enqueue-command.ts')).enqueueCommand({
          globals: globalOptions(command, context),
          context,
          type,
          ...options,
        }),
    );

  program
    .command('run')
    .description('start a run of a workflow (agents/NAME.yaml) and print its run and task ids')
    .argument('<workflow>', 'the workflow, the file agents/<workflow>.yaml beside config.yaml')
    .requiredOption('--input <text>', 'what the run works on: its {{input}}')
    .option('--wait', 'follow the run to its end and print its output (exit 1 if it failed)')
    .option('--timeout <duration>', 'with --wait: stop following after this long, e.g. 10m (the run goes on)')
    .option('--json', 'print the outcome as JSON')
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  assistant run article --input "the history of tea"',
        '  assistant run team --input "plan the offsite" --wait --timeout 10m',
      ].join('\n'),
    )
    .action(
      async (
        workflow: string,
        options: { input: string; wait?: boolean; timeout?: string; json?: boolean },
        command: Command,
      ) => {
        exitCode = await (await import('./commands/run-command.ts')).runCommand({
          globals: globalOptions(command, context),
          context,
          workflow,
          ...options,
        });
      },
    );

  program
    .command('trigger')
    .description("enqueue a platform's entry task now (no dedup or rate limits) and print its id")
    .argument('<integration>', 'the instance name from config.yaml, e.g. personal-mail')
    .argument('<platform>', 'the platform, e.g. inbox')
    .option('--json', 'print the outcome as JSON')
    .addHelpText(
      'after',
      ['', 'Examples:', '  assistant trigger system housekeeping', '  assistant trigger personal-mail inbox'].join(
        '\n',
      ),
    )
    .action(async (integration: string, platform: string, options: { json?: boolean }, command: Command) =>
      (await import('./commands/trigger-command.ts')).triggerCommand({
        globals: globalOptions(command, context),
        context,
        integration,
        platform,
        ...options,
      }),
    );

  program
    .command('steer')
    .description('steer a running task: pause, resume, stop, interject, ask, answer a clarification')
    .argument('<id>', 'the task id')
    .argument('<action>', steeringActionsText)
    .argument('[words...]', 'the reason, message, question, or clarification id and answer')
    .option('--json', 'print the outcome as JSON')
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  assistant steer 01m8… pause',
        '  assistant steer 01m8… interject "only look at mail from this week"',
        '  assistant steer 01m8… ask "what have you found so far?"',
        '  assistant steer 01m8… answer c-3 "yes, the Berlin office"',
        '  assistant steer 01m8… stop "wrong mailbox"',
      ].join('\n'),
    )
    .action(async (id: string, action: string, words: string[], options: { json?: boolean }, command: Command) =>
      (await import('./commands/steer-commands.ts')).steerCommand({
        globals: globalOptions(command, context),
        context,
        id,
        action,
        words,
        ...options,
      }),
    );

  program
    .command('chat')
    .description('talk to the assistant: each line is a message, the reply streams back (the worker answers)')
    .argument('[id]', 'the conversation (default: the newest one started here, or a new one)')
    .option('--once', 'send stdin as one message, print the reply and exit')
    .option('--json', 'with --once: print {conversation, message, reply} as JSON')
    .option('--timeout <duration>', 'with --once: how long to wait for the reply (default 120s)')
    .option(
      '--fork <conv@message>',
      'start a new conversation from a past message of CONV: its history up to and including MESSAGE (CONV is untouched)',
    )
    .addHelpText(
      'after',
      [
        '',
        'In the conversation: /new, /mode MODE, /stop, /approve ID, /reject ID, /help, /quit.',
        '',
        'Examples:',
        '  assistant chat',
        '  echo "what is urgent?" | assistant chat --once',
        '  assistant chat --fork c0mwtkme3s00004b7e@m0mwtkmfnc00007b2a',
      ].join('\n'),
    )
    .action(
      async (
        id: string | undefined,
        options: { once?: boolean; json?: boolean; timeout?: string; fork?: string },
        command: Command,
      ) =>
        (await import('./commands/chat-command.ts')).chatCommand({
          globals: globalOptions(command, context),
          context,
          id,
          ...options,
        }),
    );

  const approvals = program
    .command('approvals')
    .description('list approval requests: actions that wait for a person (pending ones by default)')
    .option('--status <status>', 'pending, approved, rejected or expired')
    .option('--all', 'every request, whatever its status')
    .option('--json', 'print them as JSON')
    .action(async (options: { status?: string; all?: boolean; json?: boolean }, command: Command) =>
      (await import('./commands/approval-commands.ts')).approvalsListCommand({
        globals: globalOptions(command, context),
        context,
        ...options,
      }),
    );
  approvals
    .command('show')
    .description('one approval request, with what it will do in full: every input, the whole text, all arguments')
    .argument('<id>', 'the request id, e.g. ap-3f2c9d1e0a4b')
    .option('--json', 'print it as JSON')
    .action(async (id: string, options: { json?: boolean }, command: Command) =>
      (await import('./commands/approval-commands.ts')).approvalShowCommand({
        globals: globalOptions(command, context),
        context,
        id,
        // `approvals` has a --json of its own, which commander gives the parent when written after `show ID`.
        json: options.json === true || command.parent?.opts().json === true,
      }),
    );
  for (const decision of ['approve', 'reject'] as const) {
    program
      .command(decision)
      .description(
        decision === 'approve'
          ? 'approve a request: its actions are enqueued now'
          : 'reject a request: nothing is done',
      )
      .argument(
        '<ids...>',
        'the request id, e.g. ap-3f2c9d1e0a4b (see `assistant approvals`); several at once, each as ID or ID@DIGEST to bind it to the digest `assistant approvals show ID` printed',
      )
      .option('--json', 'print the outcome as JSON')
      .action(async (ids: string[], options: { json?: boolean }, command: Command) => {
        const commands = await import('./commands/approval-commands.ts');
        const globals = globalOptions(command, context);
        const [only] = ids;
        if (ids.length === 1 && only !== undefined && !only.includes('@'))
          return commands.approvalDecideCommand({ globals, context, id: only, decision, ...options });
        exitCode = await commands.approvalsDecideManyCommand({ globals, context, shown: ids, decision, ...options });
      });
  }

  const shadow = program
    .command('shadow')
    .description('shadow mode: what an instance whose rules only propose would have done, and leaving it');
  shadow
    .command('report')
    .description('what the instances in shadow mode would have done, item by item (nothing of it was done)')
    .argument('[instance]', 'only this integration instance')
    .option('--json', 'print it as JSON')
    .action(async (instance: string | undefined, options: { json?: boolean }, command: Command) =>
      (await import('./commands/shadow-commands.ts')).shadowReportCommand({
        globals: globalOptions(command, context),
        context,
        ...(instance === undefined ? {} : { instance }),
        ...options,
      }),
    );
  shadow
    .command('off')
    .description('leave shadow mode: sets `shadow: false` on the instance in config.yaml, keeping its comments')
    .argument('<instance>', 'the integration instance, e.g. personal')
    .action(async (instance: string, _options, command: Command) =>
      (await import('./commands/shadow-commands.ts')).shadowOffCommand({
        globals: globalOptions(command, context),
        context,
        instance,
      }),
    );

  program
    .command('init')
    .description(
      'write config.yaml and secrets.yaml: asks for the model (tested), the first mailbox (tested), Telegram and the dashboard; the mailbox starts in shadow mode',
    )
    .option('--model-url <url>', 'the OpenAI-compatible endpoint (default http://127.0.0.1:11434/v1, Ollama)')
    .option('--model <name>', 'the model (default llama3.2)')
    .option('--model-token-file <file>', "a file holding the endpoint's API key")
    .option('--name <instance>', "the mailbox instance's name (default personal)")
    .option('--maildir <dir>', 'a local Maildir as the first mailbox (relative to config.yaml)')
    .option('--address <address>', 'your address, for a Maildir')
    .option('--imap-host <host>', 'an IMAP server as the first mailbox')
    .option('--imap-port <port>', 'its port (default 993 with TLS, 143 without)', (value) =>
      integerOption('--imap-port', value),
    )
    .option('--no-imap-tls', 'connect to IMAP without TLS')
    .option('--imap-user <login>', 'the IMAP login')
    .option('--imap-password-file <file>', 'a file holding the IMAP password')
    .option('--telegram-token-file <file>', 'a file holding a Telegram bot token: enables the Telegram chat')
    .option('--telegram-user <id>', 'a Telegram user id the bot answers (repeatable)', collect, [])
    .option('--dashboard', 'serve the dashboard (the default)')
    .option('--no-dashboard', 'do not serve the dashboard')
    .option('--port <port>', "the server's port (default 6767)", (value) => integerOption('--port', value))
    .option('-y, --yes', 'ask nothing: take every answer from the flags or its default')
    .option('--non-interactive', 'the same as --yes')
    .option('--force', 'overwrite an existing config.yaml and secrets.yaml')
    .action(
      async (
        options: {
          modelUrl?: string;
          model?: string;
          modelTokenFile?: string;
          name?: string;
          maildir?: string;
          address?: string;
          imapHost?: string;
          imapPort?: number;
          imapTls?: boolean;
          imapUser?: string;
          imapPasswordFile?: string;
          telegramTokenFile?: string;
          telegramUser: string[];
          dashboard?: boolean;
          port?: number;
          yes?: boolean;
          nonInteractive?: boolean;
          force?: boolean;
        },
        command: Command,
      ) => {
        const { yes, nonInteractive, telegramUser, imapTls, ...answers } = options;
        await (await import('./commands/init-command.ts')).initCommand({
          globals: globalOptions(command, context),
          context,
          ...answers,
          // commander sets `imapTls: true` by default for --no-imap-tls; only its `false` is an answer.
          ...(imapTls === false ? { imapTls: false } : {}),
          telegramUsers: telegramUser.map((value) => integerOption('--telegram-user', value)),
          nonInteractive: yes === true || nonInteractive === true,
        });
      },
    );

  program
    .command('pause')
    .description(
      'pause an integration instance (its schedule stops, its tasks wait), an automation rule or a schedule, until resumed',
    )
    .argument('<what>', 'instance, rule or schedule')
    .argument('<name>', 'the instance or schedule name, or a rule as INSTANCE/PLATFORM/RULE (its name or number)')
    .option('--reason <text>', 'why, recorded in the pause note and the human log')
    .option('--json', 'print the entry as JSON')
    .action(async (kind: string, name: string, options: { reason?: string; json?: boolean }, command: Command) =>
      (await import('./commands/pause-commands.ts')).pauseCommand({
        globals: globalOptions(command, context),
        context,
        kind,
        name,
        ...options,
      }),
    );
  program
    .command('resume')
    .description('resume a paused integration instance, automation rule or schedule')
    .argument('<what>', 'instance, rule or schedule')
    .argument('<name>', 'as given to `assistant pause`')
    .option('--json', 'print the entry removed as JSON')
    .action(async (kind: string, name: string, options: { json?: boolean }, command: Command) =>
      (await import('./commands/pause-commands.ts')).resumeCommand({
        globals: globalOptions(command, context),
        context,
        kind,
        name,
        ...options,
      }),
    );
  program
    .command('paused')
    .description('list what is paused, by whom, when and why')
    .option('--json', 'print the pause note as JSON')
    .action(async (options: { json?: boolean }, command: Command) =>
      (await import('./commands/pause-commands.ts')).pausedCommand({
        globals: globalOptions(command, context),
        context,
        ...options,
      }),
    );

  const automations = program.command('automations').description("explain what an item's automations decided");
  automations
    .command('explain')
    .description(
      "each automation of the item's platform: matched or not, each condition with the value it saw, each action's tier and gate, what was done or waits",
    )
    .argument('<note>', "the item's note, relative to the notes folder (or a path to the file)")
    .option('--rule <file>', 'try the automations in this YAML file (one or a list) instead of the configured ones')
    .option('--platform <platform>', 'the platform, when the instance has several and the note does not say')
    .option('--json', 'print the explanation as JSON')
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  assistant automations explain email/personal/1700000000-42.md',
        '  assistant automations explain email/personal/1700000000-42.md --rule draft-rule.yaml',
      ].join('\n'),
    )
    .action(async (note: string, options: { rule?: string; platform?: string; json?: boolean }, command: Command) =>
      (await import('./commands/automations-command.ts')).automationsExplainCommand({
        globals: globalOptions(command, context),
        context,
        note,
        ...options,
      }),
    );

  const events = program
    .command('events')
    .description('the event ledger (data/events/): what happened, typed, with lineage');
  events
    .command('ls')
    .description(
      'events in the order appended, filtered by time and type; a problem (data that broke its schema) is marked',
    )
    .option('--since <when>', 'from this time: ISO 8601 or a duration back from now (15m, 1h, 7d)')
    .option('--until <when>', 'up to this time: ISO 8601 or a duration back from now')
    .option('--type <type>', 'only this event type (repeat it, or separate with commas)', collect, [])
    .option('--limit <n>', 'at most this many (default 100, at most 10000)')
    .option('--after <cursor>', 'only events after this cursor (the `next` of an earlier listing)')
    .option('--json', 'print {events, next} as JSON')
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  assistant events ls --since 1h',
        '  assistant events ls --type mail.received --type task.failed --since 2026-11-28 --json',
      ].join('\n'),
    )
    .action(
      async (
        options: { since?: string; until?: string; type?: string[]; limit?: string; after?: string; json?: boolean },
        command: Command,
      ) =>
        (await import('./commands/event-commands.ts')).eventsListCommand({
          globals: globalOptions(command, context),
          context,
          ...options,
        }),
    );
  events
    .command('tail')
    .description('print events as any process appends them, until Ctrl-C')
    .option('--type <type>', 'only this event type (repeat it, or separate with commas)', collect, [])
    .option('--json', 'print each event as one line of JSON')
    .action(async (options: { type?: string[]; json?: boolean }, command: Command) =>
      (await import('./commands/event-commands.ts')).eventsTailCommand({
        globals: globalOptions(command, context),
        context,
        ...options,
      }),
    );

  const personas = program
    .command('personas')
    .description(
      'personas (personas/<name>.md beside config.yaml or in the notes): who an agent is and what it may do',
    );
  personas
    .command('ls')
    .description('each persona: where it is written, its model, its tools, what it delegates; broken ones flagged')
    .option('--json', 'print the personas and their problems as JSON')
    .action(async (options: { json?: boolean }, command: Command) =>
      (await import('./commands/persona-commands.ts')).personasListCommand({
        globals: globalOptions(command, context),
        context,
        json: options.json === true || command.parent?.opts().json === true,
      }),
    );
  personas
    .command('show')
    .description("one persona: its fields with defaults filled in, its instructions, and its file's problems")
    .argument('<name>', "the persona's name (its file's name without .md)")
    .option('--json', 'print the persona as JSON')
    .action(async (name: string, options: { json?: boolean }, command: Command) =>
      (await import('./commands/persona-commands.ts')).personasShowCommand({
        globals: globalOptions(command, context),
        context,
        name,
        json: options.json === true || command.parent?.opts().json === true,
      }),
    );

  const hooks = program.command('hooks').description('hooks (hooks/ beside config.yaml): their state, and dry runs');
  hooks
    .command('ls')
    .description('each hook: on, enabled/disabled/fired-once, last fired, breaker, timers pending, missed runs')
    .option('--json', 'print the states as JSON')
    .action(async (options: { json?: boolean }, command: Command) =>
      (await import('./commands/hook-commands.ts')).hooksListCommand({
        globals: globalOptions(command, context),
        context,
        json: options.json === true || command.parent?.opts().json === true,
      }),
    );
  hooks
    .command('test')
    .description(
      'a dry run of a hook against an event: the fast path with its values, the slow path, the actions and their approvals; nothing runs',
    )
    .argument('<hook>', "the hook's name (its file's name in hooks/)")
    .requiredOption(
      '--event <file-or-id>',
      'an event id from `assistant events ls`, or a JSON file ({"type": …, "data": {…}})',
    )
    .option('--ask', "call the model for the hook's `ask:` (its verdict is cached, as the runner's would be)")
    .option('--json', 'print the dry run as JSON')
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  assistant hooks test accountant --event ev-3f2c9d1e0a4b5c6d7e8f',
        '  assistant hooks test deadline --event mail.json --ask',
      ].join('\n'),
    )
    .action(async (hook: string, options: { event: string; ask?: boolean; json?: boolean }, command: Command) =>
      (await import('./commands/hook-commands.ts')).hooksTestCommand({
        globals: globalOptions(command, context),
        context,
        hook,
        ...options,
      }),
    );

  program
    .command('act')
    .description(
      'take a platform action on one item by hand: recorded as your approval, run by the worker (irreversible ones once per item)',
    )
    .argument('<instance>', 'the integration instance, e.g. personal')
    .argument('<platform>', 'its platform, e.g. inbox')
    .argument('<note>', "the item's note, relative to the notes folder (see `assistant notes ls`)")
    .argument('<action>', 'an action the platform declares, e.g. archive or unsubscribe')
    .argument('[argument]', "the action's argument when it takes one, e.g. a folder for move")
    .option('--text <text>', 'the full words a reply or comment sends (send_reply, comment): sent exactly')
    .option('--text-file <file>', 'the same, read from a file')
    .option('--json', 'print the approval and the task as JSON')
    .action(
      async (
        instance: string,
        platform: string,
        note: string,
        action: string,
        argument: string | undefined,
        options: { json?: boolean; text?: string; textFile?: string },
        command: Command,
      ) =>
        (await import('./commands/approval-commands.ts')).actCommand({
          globals: globalOptions(command, context),
          context,
          instance,
          platform,
          note,
          action,
          argument,
          ...options,
        }),
    );

  const queue = program.command('queue').description('look at and maintain the task queue');
  queue
    .command('stats')
    .description('count tasks per state and type')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }, command: Command) =>
      (await import('./commands/queue-commands.ts')).queueStatsCommand({
        globals: globalOptions(command, context),
        context,
        ...options,
      }),
    );
  queue
    .command('ls')
    .description('list tasks from their file names')
    .option('--state <state>', 'pending, active, done or failed')
    .option('--type <type>', 'a task type, or a pattern with *')
    .option('--limit <n>', 'at most this many')
    .option('--json', 'print JSON')
    .action(async (options: { state?: string; type?: string; limit?: string; json?: boolean }, command: Command) =>
      (await import('./commands/queue-commands.ts')).queueListCommand({
        globals: globalOptions(command, context),
        context,
        ...options,
      }),
    );
  queue
    .command('prune')
    .description('remove done and failed tasks past their retention')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }, command: Command) =>
      (await import('./commands/queue-commands.ts')).queuePruneCommand({
        globals: globalOptions(command, context),
        context,
        ...options,
      }),
    );
  queue
    .command('recover')
    .description('return tasks of stopped workers to pending/ and sweep leftovers, once')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }, command: Command) =>
      (await import('./commands/queue-commands.ts')).queueRecoverCommand({
        globals: globalOptions(command, context),
        context,
        ...options,
      }),
    );

  queue
    .command('migrate')
    .description('move every task to the other backend (workers stopped), keeping ids and history')
    .requiredOption('--to <backend>', 'redis or file: where the tasks go; config.yaml says where they are now')
    .option('--dry-run', 'count what would move, move nothing')
    .option('--json', 'print JSON')
    .action(async (options: { to: string; dryRun?: boolean; json?: boolean }, command: Command) =>
      (await import('./commands/queue-commands.ts')).queueMigrateCommand({
        globals: globalOptions(command, context),
        context,
        ...options,
      }),
    );

  const task = program.command('task').description('look at, retry or delete tasks');
  task
    .command('show')
    .description("print a task's fields, payload, result or error, and the history of its attempts")
    .argument('<id>', 'the task id')
    .option('--json', 'print JSON')
    .action(async (id: string, options: { json?: boolean }, command: Command) =>
      (await import('./commands/task-commands.ts')).taskShowCommand({
        globals: globalOptions(command, context),
        context,
        id,
        ...options,
      }),
    );
  task
    .command('retry')
    .description('move a failed task back to pending, with fresh attempts; or every failed task that matches')
    .argument('[id]', 'the task id; leave it out to retry in bulk with --state failed')
    .option('--state <state>', 'bulk: the state to retry from (only `failed`)')
    .option('--type <pattern>', "bulk: an exact type or a pattern with * ('email.*')")
    .option('--since <when>', 'bulk: failed within this long (2h) or since this time (2026-11-26T06:00:00Z)')
    .option('--dry-run', 'bulk: list what would be retried, move nothing')
    .option('--json', 'print JSON')
    .action(
      async (
        id: string | undefined,
        options: { json?: boolean; state?: string; type?: string; since?: string; dryRun?: boolean },
        command: Command,
      ) => {
        exitCode = await (await import('./commands/task-commands.ts')).taskRetryCommand({
          globals: globalOptions(command, context),
          context,
          id,
          ...options,
        });
      },
    );
  task
    .command('delete')
    .description('delete a failed task for good; or every failed task that matches')
    .argument('[id]', 'the task id; leave it out to delete in bulk with --state failed')
    .option('--state <state>', 'bulk: the state to delete from (only `failed`)')
    .option('--type <pattern>', "bulk: an exact type or a pattern with * ('email.*')")
    .option('--since <when>', 'bulk: failed within this long (2h) or since this time (2026-11-26T06:00:00Z)')
    .option('--dry-run', 'bulk: list what would be deleted, delete nothing')
    .option('--json', 'print JSON')
    .action(
      async (
        id: string | undefined,
        options: { json?: boolean; state?: string; type?: string; since?: string; dryRun?: boolean },
        command: Command,
      ) => {
        exitCode = await (await import('./commands/task-commands.ts')).taskDeleteCommand({
          globals: globalOptions(command, context),
          context,
          id,
          ...options,
        });
      },
    );
  task
    .command('watch')
    .description("print a task's events (notifications, clarifications, steps, steering) until it finishes")
    .argument('<id>', 'the task id')
    .option('--json', 'one JSON object per line')
    .action(async (id: string, options: { json?: boolean }, command: Command) =>
      (await import('./commands/steer-commands.ts')).taskWatchCommand({
        globals: globalOptions(command, context),
        context,
        id,
        ...options,
      }),
    );
  task
    .command('reroute')
    .description("deliver a done service task's result again, where its on_result says")
    .argument('<id>', 'the task id')
    .option('--json', 'print JSON')
    .action(async (id: string, options: { json?: boolean }, command: Command) =>
      (await import('./commands/task-commands.ts')).taskRerouteCommand({
        globals: globalOptions(command, context),
        context,
        id,
        ...options,
      }),
    );

  const notes = program.command('notes').description('list, show and search notes');
  notes
    .command('ls')
    .description('list notes under a folder')
    .argument('[path]', 'a folder relative to the notes root')
    .option('--json', 'print JSON')
    .action(async (folder: string | undefined, options: { json?: boolean }, command: Command) =>
      (await import('./commands/notes-commands.ts')).notesListCommand({
        globals: globalOptions(command, context),
        context,
        ...options,
        ...(folder === undefined ? {} : { folder }),
      }),
    );
  notes
    .command('show')
    .description("print a note's frontmatter and body")
    .argument('<path>', 'the note, relative to the notes root')
    .option('--json', 'print JSON')
    .action(async (notePath: string, options: { json?: boolean }, command: Command) =>
      (await import('./commands/notes-commands.ts')).notesShowCommand({
        globals: globalOptions(command, context),
        context,
        notePath,
        ...options,
      }),
    );
  notes
    .command('search')
    .description('find notes by text and frontmatter fields, or by meaning with --semantic')
    .argument('[query]', 'text to look for, any case')
    .option('--where <condition>', 'key=value, key>=value, key<value, key? or !key? (repeatable)', collect, [])
    .option('--in <folder>', 'only under this folder')
    .option('--semantic', "hybrid search by words and meaning through memory's index (prints the mode it used)")
    .option('--explain', 'with --semantic: the score parts of each hit (lexical, vector, entity)')
    .option('--limit <n>', 'with --semantic: how many hits (default 10)')
    .option('--json', 'print JSON')
    .action(
      async (
        query: string | undefined,
        options: {
          where: string[];
          in?: string;
          json?: boolean;
          semantic?: boolean;
          explain?: boolean;
          limit?: string;
        },
        command: Command,
      ) => {
        const globals = globalOptions(command, context);
        if (options.semantic || options.explain || options.limit !== undefined) {
          return (await import('./commands/memory-commands.ts')).notesSemanticSearchCommand({
            globals,
            context,
            query: query ?? '',
            semantic: options.semantic === true,
            where: options.where,
            ...(options.in === undefined ? {} : { folder: options.in }),
            ...(options.explain === undefined ? {} : { explain: options.explain }),
            // Checked when the command runs (a USAGE error), as the other --limit options are.
            ...(options.limit === undefined ? {} : { limit: positiveLimit(options.limit) }),
            ...(options.json === undefined ? {} : { json: options.json }),
          });
        }
        return (await import('./commands/notes-commands.ts')).notesSearchCommand({
          globals,
          context,
          where: options.where,
          ...(query === undefined ? {} : { query }),
          ...(options.in === undefined ? {} : { folder: options.in }),
          ...(options.json === undefined ? {} : { json: options.json }),
        });
      },
    );

  const contacts = program
    .command('contacts')
    .description('the contacts memory keeps (contacts/<slug>.md): list, show, merge and unmerge');
  contacts
    .command('ls')
    .description('every contact: slug, name, organisation, addresses, handles, merges')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }, command: Command) =>
      (await import('./commands/memory-commands.ts')).contactsListCommand({
        globals: globalOptions(command, context),
        context,
        ...options,
      }),
    );
  contacts
    .command('show')
    .description(
      'one contact: identity, observed identifiers and where, facts about them, the items they appear in, merges',
    )
    .argument('<slug>', "the contact's slug, e.g. alice-martin")
    .option('--json', 'print JSON')
    .action(async (slug: string, options: { json?: boolean }, command: Command) =>
      (await import('./commands/memory-commands.ts')).contactsShowCommand({
        globals: globalOptions(command, context),
        context,
        slug,
        ...options,
      }),
    );
  contacts
    .command('merge')
    .description('merge FROM into INTO: lookups of FROM find INTO; both notes are kept, and unmerge undoes it')
    .argument('<into>', 'the contact that stays')
    .argument('<from>', 'the contact merged into it')
    .option('--json', 'print JSON')
    .action(async (into: string, from: string, options: { json?: boolean }, command: Command) =>
      (await import('./commands/memory-commands.ts')).contactsMergeCommand({
        globals: globalOptions(command, context),
        context,
        into,
        from,
        ...options,
      }),
    );
  contacts
    .command('unmerge')
    .description('undo the merge of a contact: both notes as they were before')
    .argument('<slug>', 'the contact that was merged into another')
    .option('--json', 'print JSON')
    .action(async (slug: string, options: { json?: boolean }, command: Command) =>
      (await import('./commands/memory-commands.ts')).contactsUnmergeCommand({
        globals: globalOptions(command, context),
        context,
        slug,
        ...options,
      }),
    );

  const ownerTasks = program
    .command('tasks')
    .description("your own tasks (tasks/*.md: follow-ups and to-dos), not the queue's (that is `assistant task`)");
  ownerTasks
    .command('ls', { isDefault: true })
    .description('your tasks, soonest due first')
    .option('--due <window>', 'overdue, today (overdue included), week or all (default all)')
    .option('--status <status>', 'open (default), done or dropped')
    .option('--json', 'print JSON')
    .action(async (options: { due?: string; status?: string; json?: boolean }, command: Command) =>
      (await import('./commands/memory-commands.ts')).tasksListCommand({
        globals: globalOptions(command, context),
        context,
        ...options,
      }),
    );
  ownerTasks
    .command('add')
    .description('add a task of yours')
    .argument('<title>', 'what to do')
    .option('--due <date>', 'a day (2026-12-01) or an ISO instant (2026-12-01T09:00:00Z)')
    .option('--about <subject>', 'a contact slug, contact:<slug>, topic:<word> or a word (repeatable)', collect, [])
    .option('--json', 'print JSON')
    .action(async (title: string, options: { due?: string; about: string[]; json?: boolean }, command: Command) =>
      (await import('./commands/memory-commands.ts')).tasksAddCommand({
        globals: globalOptions(command, context),
        context,
        title,
        ...options,
      }),
    );
  ownerTasks
    .command('done')
    .description('mark a task of yours done')
    .argument('<id>', "the task's id (from `assistant tasks`)")
    .option('--json', 'print JSON')
    .action(async (id: string, options: { json?: boolean }, command: Command) =>
      (await import('./commands/memory-commands.ts')).tasksDoneCommand({
        globals: globalOptions(command, context),
        context,
        id,
        ...options,
      }),
    );

  const memory = program
    .command('memory')
    .description("memory's search index under data/memory/index (a cache, rebuilt from the notes at any time)");
  memory
    .command('status')
    .description('notes indexed, embedded with the current model, waiting for a vector, broken')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }, command: Command) =>
      (await import('./commands/memory-commands.ts')).memoryStatusCommand({
        globals: globalOptions(command, context),
        context,
        ...options,
      }),
    );
  memory
    .command('reindex')
    .description('drop the vector cache and read and embed every note again (exit 1 when the endpoint is down)')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }, command: Command) => {
      exitCode = await (await import('./commands/memory-commands.ts')).memoryReindexCommand({
        globals: globalOptions(command, context),
        context,
        ...options,
      });
    });

  const mcp = program
    .command('mcp')
    .description(
      "the Model Context Protocol: the MCP servers config.yaml's `mcp_servers:` gives agent loops, and Assistant as an MCP server",
    );
  mcp
    .command('ls')
    .description('start each configured MCP server (or the one named), list its tools with their tier, and stop it')
    .argument('[server]', 'only this server')
    .option('--json', 'print JSON')
    .action(async (server: string | undefined, options: { json?: boolean }, command: Command) => {
      exitCode = await (await import('./commands/mcp-commands.ts')).mcpListCommand({
        globals: globalOptions(command, context),
        context,
        ...(server === undefined ? {} : { server }),
        ...options,
      });
    });

  mcp
    .command('serve')
    .description(
      'serve MCP on stdin/stdout for a desktop assistant or editor: search and read notes, tasks, approvals (read only), trigger, chat',
    )
    .addHelpText(
      'after',
      [
        '',
        'A client config (Claude Desktop, an editor):',
        // The pinned Node 24 by its path: a client's own `node` may be 20, which cannot run the TypeScript sources.
        '  {"command": "/path/to/assistant/node_modules/.bin/node", "args": ["/path/to/assistant/apps/cli/src/main.ts", "mcp", "serve", "--config", "/path/to/config.yaml"]}',
        'No tool approves, steers or writes notes. docs/mcp.md has the tools.',
      ].join('\n'),
    )
    .action(async (_options, command: Command) =>
      (await import('./commands/mcp-serve-command.ts')).mcpServeCommand({
        globals: globalOptions(command, context),
        context,
      }),
    );

  program
    .command('log')
    .description("print a day's human log")
    .option('--date <date>', 'YYYY-MM-DD (default: today)')
    .option('--follow', 'keep printing new lines until Ctrl-C')
    .action(async (options: { date?: string; follow?: boolean }, command: Command) =>
      (await import('./commands/log-command.ts')).logCommand({
        globals: globalOptions(command, context),
        context,
        ...options,
      }),
    );

  const config = program.command('config').description('check the configuration or print its schema');
  config
    .command('check')
    .description('validate config.yaml and secrets.yaml and summarise them')
    .action(async (_options, command: Command) =>
      (await import('./commands/config-check-command.ts')).configCheckCommand({
        globals: globalOptions(command, context),
        context,
      }),
    );
  config
    .command('schema')
    .description('print a JSON Schema of config.yaml for editor completion')
    .action(async () => (await import('./commands/config-schema-command.ts')).configSchemaCommand(context));

  program
    .command('doctor')
    .description('check config, data directories, LLM endpoints and credentials')
    .action(async (_options, command: Command) => {
      exitCode = await (await import('./commands/doctor-command.ts')).doctorCommand({
        globals: globalOptions(command, context),
        context,
      });
    });
  program
    .command('backup')
    .description(
      'write a consistent archive of config.yaml, data/ and (with --with-secrets) secrets.yaml while Assistant runs',
    )
    .option('--out <file>', 'the archive to write (default: assistant-backup-YYYYMMDD-HHMMSS.tar.gz here)')
    .option('--with-secrets', 'put secrets.yaml and data/api-token in the archive too')
    .option('--json', 'print the manifest summary as JSON')
    .addHelpText(
      'after',
      ['', 'Examples:', '  assistant backup', '  assistant backup --out /backups/assistant.tar.gz --with-secrets'].join(
        '\n',
      ),
    )
    .action(async (options: { out?: string; withSecrets?: boolean; json?: boolean }, command: Command) =>
      (await import('./commands/backup-commands.ts')).backupCommand({
        globals: globalOptions(command, context),
        context,
        ...options,
      }),
    );
  program
    .command('restore')
    .description('check a backup archive and restore it into an empty directory')
    .argument('<archive>', 'the .tar.gz `assistant backup` wrote')
    .option('--into <dir>', 'an empty directory, or one that does not exist yet')
    .option('--json', 'print the manifest summary as JSON')
    .addHelpText(
      'after',
      ['', 'Examples:', '  assistant restore assistant-backup-20261128-010000.tar.gz --into ~/assistant-restored'].join(
        '\n',
      ),
    )
    .action(async (archive: string, options: { into?: string; json?: boolean }) =>
      (await import('./commands/backup-commands.ts')).restoreCommand({ context, archive, ...options }),
    );

  const service = program
    .command('service')
    .description('run `assistant start` as a systemd user service: install, uninstall, status');
  service
    .command('install')
    .description(
      'write ~/.config/systemd/user/assistant.service for this config and enable it (systemctl --user enable --now)',
    )
    .option('--print', 'print the unit instead of writing and enabling it')
    .action(async (options: { print?: boolean }, command: Command) =>
      (await import('./commands/service-commands.ts')).serviceInstallCommand({
        globals: globalOptions(command, context),
        context,
        ...options,
      }),
    );
  service
    .command('uninstall')
    .description('stop and disable the service and remove its unit file')
    .action(async (_options, command: Command) =>
      (await import('./commands/service-commands.ts')).serviceUninstallCommand({
        globals: globalOptions(command, context),
        context,
      }),
    );
  service
    .command('status')
    .description('systemctl --user status assistant')
    .action(async (_options, command: Command) => {
      exitCode = await (await import('./commands/service-commands.ts')).serviceStatusCommand({
        globals: globalOptions(command, context),
        context,
      });
    });

  program
    .command('version')
    .description('print the version')
    .action(async () => (await import('./commands/version-command.ts')).versionCommand(context));

  return { program, exitCode: () => exitCode };
}
