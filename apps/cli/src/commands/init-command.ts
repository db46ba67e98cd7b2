import { randomUUID } from 'node:crypto';
import { access, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface, type Interface } from 'node:readline/promises';
import { Writable } from 'node:stream';
import { Secret } from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import type { CliContext } from '../cli-context.ts';
import { checkLlmProfile } from '../doctor/check-llm-profile.ts';
import { type DoctorCheck, formatDoctorCheck } from '../doctor/doctor-check.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';
import { configCheckCommand } from './config-check-command.ts';

/** The answers `assistant init` needs: each from a flag, else (in a terminal) from a question. */
export interface InitAnswers {
  /** The OpenAI-compatible endpoint, e.g. `http://127.0.0.1:11434/v1`. */
  modelUrl?: string | undefined;
  model?: string | undefined;
  /** A file holding the endpoint's API key, for a remote endpoint. */
  modelTokenFile?: string | undefined;
  /** The mailbox instance's name. @default personal */
  name?: string | undefined;
  /** A local Maildir (relative to config.yaml, or absolute) instead of IMAP. */
  maildir?: string | undefined;
  imapHost?: string | undefined;
  imapPort?: number | undefined;
  /** Connect without TLS (a local test server on port 143). @default TLS */
  imapTls?: boolean | undefined;
  imapUser?: string | undefined;
  imapPasswordFile?: string | undefined;
  /** The owner's address on a Maildir (IMAP uses the login). */
  address?: string | undefined;
  telegramTokenFile?: string | undefined;
  /** Telegram user ids allowed to talk to the bot. */
  telegramUsers?: number[] | undefined;
  dashboard?: boolean | undefined;
  /** The server's port. @default 6767 */
  port?: number | undefined;
}

export interface InitCommandOptions extends InitAnswers {
  globals: GlobalOptions;
  context: CliContext;
  /** Ask nothing: every answer comes from the flags or its default (`--yes`, `--non-interactive`). */
  nonInteractive?: boolean;
  /** Overwrite an existing config.yaml or secrets.yaml. */
  force?: boolean;
}

/** The answers after the questions, with what `init` writes to secrets.yaml. */
interface Settled {
  modelUrl: string;
  model: string;
  modelToken?: string;
  name: string;
  mailbox:
    | { kind: 'maildir'; maildir: string; address?: string }
    | { kind: 'imap'; host: string; port: number; tls: boolean; user: string; password: string };
  telegram?: { token: string; users: number[] };
  dashboard: boolean;
  port: number;
}

const defaultModelUrl = 'http://127.0.0.1:11434/v1';
const defaultModel = 'llama3.2';
const instanceNamePattern = /^[a-z][a-z0-9_-]*$/;

/**
 * `assistant init`: asks for the model endpoint (and tests it, as `assistant doctor` does), the first mailbox (a
 * Maildir, or IMAP with a login test), optional Telegram and the dashboard; writes config.yaml and secrets.yaml
 * (mode 0600) with comments, the mailbox in shadow mode (decision 0031); then runs `config check`. It never
 * overwrites either file without `--force`. With `--yes` it asks nothing: scripts and tests pass flags.
 */
export async function initCommand(options: InitCommandOptions): Promise<void> {
  const { context } = options;
  const configFile = path.resolve(context.cwd, options.globals.configPath);
  const secretsFile = path.join(path.dirname(configFile), 'secrets.yaml');
  if (!options.force) {
    for (const file of [configFile, secretsFile]) {
      if (await exists(file)) {
        throw new AssistantError('CONFLICT', `${file} exists already; \`assistant init\` does not overwrite it`, {
          hint: 'edit it by hand, or run `assistant init --force` to replace config.yaml and secrets.yaml',
        });
      }
    }
  }
  const prompter = options.nonInteractive ? undefined : openPrompter(context);
  try {
    const settled = await settle(options, prompter);
    for (;;) {
      await writeFiles({ configFile, secretsFile, settled });
      context.stdout.write(`wrote ${configFile} and ${secretsFile} (mode 0600)\n`);
      const mailbox = await checkMailbox(options);
      context.stdout.write(`${formatDoctorCheck(mailbox)}\n`);
      if (mailbox.ok) break;
      if (!prompter) {
        throw new AssistantError('USAGE', `the mailbox does not work: ${mailbox.message}`, {
          hint: `${mailbox.hint ?? 'check the mailbox flags'}; config.yaml is written: fix it and run \`assistant doctor\`, or run \`assistant init --force\` again`,
        });
      }
      if (!(await prompter.confirm('Enter the mailbox again?', true))) break;
      settled.mailbox = await askMailbox({}, prompter);
    }
    await configCheckCommand({ globals: options.globals, context });
    context.stdout.write(
      [
        '',
        `${settled.name} is in shadow mode: its rules only propose, nothing is done to your mail.`,
        'Next: `assistant start`, then `assistant shadow report` to see what it would have done,',
        `and \`assistant shadow off ${settled.name}\` once you trust it.`,
        '',
      ].join('\n'),
    );
  } finally {
    prompter?.close();
  }
}

async function settle(options: InitCommandOptions, prompter: Prompter | undefined): Promise<Settled> {
  const { context } = options;
  const name = options.name ?? 'personal';
  if (!instanceNamePattern.test(name)) {
    throw new AssistantError('USAGE', `--name must be lower case letters, digits, - and _, got \`${name}\``);
  }
  let modelUrl = options.modelUrl ?? (prompter ? undefined : defaultModelUrl);
  let model = options.model ?? (prompter ? undefined : defaultModel);
  const modelToken = options.modelTokenFile === undefined ? undefined : await readSecretFile(options.modelTokenFile);
  for (;;) {
    modelUrl ??= await prompter?.ask('Model endpoint (OpenAI-compatible base URL)', defaultModelUrl);
    model ??= await prompter?.ask('Model name', defaultModel);
    if (modelUrl === undefined || model === undefined) throw new Error('unreachable: no model without a prompter');
    const url = modelUrl;
    if (!/^https?:\/\/[^/]/.test(url)) {
      if (!prompter) throw new AssistantError('USAGE', `--model-url must be an http(s) URL, got \`${url}\``);
      context.stdout.write(`not an http(s) URL: ${url}\n`);
      modelUrl = undefined;
      continue;
    }
    const check = await checkLlmProfile({
      name: 'default',
      profile: {
        baseUrl: url,
        model,
        ...(modelToken === undefined ? {} : { apiKey: new Secret('llm_token', modelToken) }),
      },
    });
    context.stdout.write(`${formatDoctorCheck(check)}\n`);
    if (check.ok) break;
    if (!prompter) {
      throw new AssistantError('LLM_REQUEST_FAILED', `the model endpoint does not work: ${check.message}`, {
        hint: `${check.hint ?? 'check --model-url and --model'}; nothing was written`,
      });
    }
    if (!(await prompter.confirm('Enter the model again? (no: keep it as it is)', true))) break;
    modelUrl = undefined;
    model = undefined;
  }
  const mailbox = await askMailbox(options, prompter);
  let telegram: Settled['telegram'];
  if (options.telegramTokenFile !== undefined) {
    telegram = { token: await readSecretFile(options.telegramTokenFile), users: options.telegramUsers ?? [] };
  } else if (prompter && (await prompter.confirm('Chat with Assistant over Telegram?', false))) {
    const token = await prompter.ask('Bot token from @BotFather', undefined, { secret: true });
    const users = await prompter.ask('Your Telegram user id (digits; others are ignored)');
    telegram = {
      token,
      users: users
        .split(/[\s,]+/)
        .filter(Boolean)
        .map(Number)
        .filter(Number.isInteger),
    };
  }
  const dashboard = options.dashboard ?? (prompter ? await prompter.confirm('Serve the dashboard?', true) : true);
  return {
    modelUrl: modelUrl ?? defaultModelUrl,
    model: model ?? defaultModel,
    ...(modelToken === undefined ? {} : { modelToken }),
    name,
    mailbox,
    ...(telegram ? { telegram } : {}),
    dashboard,
    port: options.port ?? 6767,
  };
}

async function askMailbox(answers: InitAnswers, prompter: Prompter | undefined): Promise<Settled['mailbox']> {
  if (answers.maildir !== undefined) {
    return { kind: 'maildir', maildir: answers.maildir, ...(answers.address ? { address: answers.address } : {}) };
  }
  if (answers.imapHost !== undefined) {
    if (answers.imapUser === undefined || answers.imapPasswordFile === undefined) {
      if (!prompter) throw new AssistantError('USAGE', '--imap-host needs --imap-user and --imap-password-file');
    }
    const user = answers.imapUser ?? (await ask(prompter, 'IMAP login (usually your address)'));
    const password =
      answers.imapPasswordFile === undefined
        ? await ask(prompter, 'IMAP password (or app password)', { secret: true })
        : await readSecretFile(answers.imapPasswordFile);
    const tls = answers.imapTls ?? true;
    return { kind: 'imap', host: answers.imapHost, port: answers.imapPort ?? (tls ? 993 : 143), tls, user, password };
  }
  if (!prompter) {
    throw new AssistantError('USAGE', 'the first mailbox is missing: give --maildir DIR, or --imap-host HOST', {
      hint: 'with --imap-host also --imap-user and --imap-password-file',
    });
  }
  const kind = await prompter.choose('Your first mailbox: imap or maildir?', ['imap', 'maildir'], 'imap');
  if (kind === 'maildir') {
    const maildir = await prompter.ask('Maildir path (relative to config.yaml)', './Maildir');
    const address = await prompter.ask('Your address (optional)', '');
    return { kind: 'maildir', maildir, ...(address ? { address } : {}) };
  }
  const host = await prompter.ask('IMAP server');
  const tls = await prompter.confirm('TLS (IMAPS)?', true);
  const port = Number(await prompter.ask('IMAP port', tls ? '993' : '143'));
  const user = await prompter.ask('IMAP login (usually your address)');
  const password = await prompter.ask('IMAP password (or app password)', undefined, { secret: true });
  return { kind: 'imap', host, port: Number.isInteger(port) ? port : 993, tls, user, password };
}

async function ask(prompter: Prompter | undefined, question: string, options: { secret?: boolean } = {}) {
  if (!prompter) throw new Error(`unreachable: ${question} without a prompter`);
  return prompter.ask(question, undefined, options);
}

/** The mailbox's own check (`assistant doctor`'s): a Maildir that exists, or an IMAP login that works. */
async function checkMailbox(options: InitCommandOptions): Promise<DoctorCheck> {
  const { config, registry } = await loadCliConfig(options);
  const instance = config.integrations.find((entry) => entry.type === 'email');
  const check = instance ? await registry.doctorCheck('email') : undefined;
  if (!instance || !check) return { ok: true, message: 'mailbox: no check available' };
  try {
    return await check({
      instance: { name: instance.name, settings: registry.instance(instance.name)?.settings ?? {} },
      signal: AbortSignal.timeout(60_000),
      configFile: config.paths.configFile,
    });
  } catch (error) {
    return { ok: false, message: `${instance.name}: ${(error as Error).message}` };
  }
}

/** secrets.yaml first (0600), then config.yaml, each written whole to a temporary file and renamed into place. */
async function writeFiles(options: { configFile: string; secretsFile: string; settled: Settled }): Promise<void> {
  const { settled } = options;
  await writeAtomically(options.secretsFile, secretsYaml(settled), 0o600);
  await writeAtomically(options.configFile, configYaml(settled), 0o644);
}

function secretsYaml(settled: Settled): string {
  const lines = [
    '# Written by `assistant init`. Keep it private (mode 0600; git ignores secrets.yaml). config.yaml refers to each',
    '# entry as `!secret name`; values never appear in logs, task files or notes.',
  ];
  if (settled.modelToken !== undefined) lines.push(`llm_token: ${JSON.stringify(settled.modelToken)}`);
  if (settled.mailbox.kind === 'imap') lines.push(`imap_password: ${JSON.stringify(settled.mailbox.password)}`);
  if (settled.telegram) lines.push(`telegram_bot_token: ${JSON.stringify(settled.telegram.token)}`);
  return `${lines.join('\n')}\n`;
}

function configYaml(settled: Settled): string {
  const quote = (value: string) => JSON.stringify(value);
  const { mailbox } = settled;
  const mailboxLines =
    mailbox.kind === 'maildir'
      ? [
          `    # A local Maildir (as mbsync or offlineimap keep it), relative to this file.`,
          `    maildir: ${quote(mailbox.maildir)}`,
          ...(mailbox.address ? [`    username: ${quote(mailbox.address)}`] : []),
        ]
      : [
          `    imap_server: ${quote(mailbox.host)}`,
          `    port: ${mailbox.port}`,
          `    tls: ${mailbox.tls}`,
          `    username: ${quote(mailbox.user)}`,
          '    password: !secret imap_password',
        ];
  const lines = [
    '# Assistant configuration, written by `assistant init`. Every key is documented in docs/configuration.md;',
    '# `assistant config check` validates it and `assistant doctor` tests the model and the mailbox. Secrets are in',
    '# secrets.yaml (mode 0600), referred to here as `!secret name`.',
    '',
    '# Where the queue, notes, logs and steering files live (relative to this file).',
    'data_dir: ./data',
    '',
    '# The model that classifies mail: any OpenAI-compatible endpoint. A local one keeps your mail on this machine.',
    'llms:',
    '  default:',
    `    base_url: ${quote(settled.modelUrl)}`,
    `    model: ${quote(settled.model)}`,
    ...(settled.modelToken === undefined ? [] : ['    api_key: !secret llm_token']),
    '',
    'integrations:',
    '  # Your first mailbox, in shadow mode: its rules only propose, and nothing is done to your mail. See what they',
    `  # would have done with \`assistant shadow report ${settled.name}\`; \`assistant shadow off ${settled.name}\` ends it.`,
    '  # Every key, field and action: integrations/email/README.md.',
    '  - type: email',
    `    name: ${settled.name}`,
    '    shadow: true',
    ...mailboxLines,
    '    schedule: {every: 15m}',
    '    platforms:',
    '      inbox:',
    '        automations:',
    '          - name: archive newsletters',
    '            when: {newsletter: true}',
    '            then: archive',
    '          - name: flag mail that needs an answer and draft a reply',
    "            when: {human: '>= 0.8', requires_response: true}",
    '            then: [flag, draft_reply]',
  ];
  if (settled.telegram) {
    lines.push(
      '  # Chat with Assistant over Telegram (docs/chat.md). Only the user ids listed are answered.',
      '  - type: chat',
      '    name: chat',
      '    telegram:',
      '      token: !secret telegram_bot_token',
      `      allowed_users: [${settled.telegram.users.join(', ')}]`,
    );
  }
  lines.push(
    '',
    '# The REST API and the dashboard, on loopback only; another address needs `token: !secret server_token`.',
    'server:',
    '  host: 127.0.0.1',
    `  port: ${settled.port}`,
    `  dashboard: ${settled.dashboard}`,
    '',
  );
  return lines.join('\n');
}

async function writeAtomically(file: string, text: string, mode: number): Promise<void> {
  const temporary = `${file}.${randomUUID()}.tmp`;
  try {
    await writeFile(temporary, text, { mode, flag: 'wx' });
    await rename(temporary, file);
  } finally {
    await rm(temporary, { force: true });
  }
}

async function readSecretFile(file: string): Promise<string> {
  try {
    const value = (await readFile(file, 'utf8')).trim();
    if (value === '') throw new AssistantError('USAGE', `${file} is empty; it should hold the secret`);
    return value;
  } catch (error) {
    if (error instanceof AssistantError) throw error;
    throw new AssistantError('USAGE', `cannot read ${file}: ${(error as Error).message}`);
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

interface Prompter {
  ask(question: string, fallback?: string, options?: { secret?: boolean }): Promise<string>;
  confirm(question: string, fallback: boolean): Promise<boolean>;
  choose<Choice extends string>(question: string, choices: readonly Choice[], fallback: Choice): Promise<Choice>;
  close(): void;
}

/**
 * Questions on the terminal with node:readline/promises. A secret's typing is not echoed: the output stream is muted
 * while it is read, so a password never shows on the screen or in a terminal's scrollback.
 */
function openPrompter(context: CliContext): Prompter {
  let muted = false;
  const output = new Writable({
    write(chunk, _encoding, callback) {
      if (!muted) context.stdout.write(chunk);
      callback();
    },
  });
  const input = context.stdin ?? process.stdin;
  const readline: Interface = createInterface({ input, output, terminal: input.isTTY === true });
  const ended = new Promise<never>((_resolve, reject) => {
    readline.once('close', () =>
      reject(
        new AssistantError(
          'USAGE',
          'the input ended before every question was answered (use --yes and flags in scripts)',
        ),
      ),
    );
  });
  ended.catch(() => {});
  const question = (text: string) => Promise.race([readline.question(text), ended]);
  const prompter: Prompter = {
    async ask(text, fallback, options = {}) {
      for (;;) {
        const shown = `${text}${fallback === undefined || fallback === '' || options.secret ? '' : ` [${fallback}]`}: `;
        let answer: string;
        if (options.secret) {
          context.stdout.write(shown);
          muted = true;
          try {
            answer = await question('');
          } finally {
            muted = false;
            context.stdout.write('\n');
          }
        } else {
          answer = await question(shown);
          // A terminal echoes the typed line and its newline; piped answers are not echoed, so end the line here.
          if (input.isTTY !== true) context.stdout.write('\n');
        }
        const value = answer.trim() || fallback;
        if (value !== undefined) return value;
        context.stdout.write('an answer is needed\n');
      }
    },
    async confirm(text, fallback) {
      const answer = (await prompter.ask(`${text} (y/n)`, fallback ? 'y' : 'n')).toLowerCase();
      return answer.startsWith('y');
    },
    async choose(text, choices, fallback) {
      for (;;) {
        const answer = (await prompter.ask(text, fallback)).toLowerCase();
        const found = choices.find((choice) => choice === answer);
        if (found) return found;
        context.stdout.write(`expected one of ${choices.join(', ')}\n`);
      }
    },
    close: () => readline.close(),
  };
  return prompter;
}
