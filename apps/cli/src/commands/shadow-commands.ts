import { randomUUID } from 'node:crypto';
import { readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { shadowReport } from '@assistant/actions';
import { AssistantError } from '@assistant/errors';
import { FileNoteStore } from '@assistant/notes';
import { isMap, isScalar, isSeq, parseDocument } from 'yaml';
import type { CliContext } from '../cli-context.ts';
import { formatLocalTime } from '../format-local-time.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';

export interface ShadowCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
}

/**
 * `assistant shadow report [INSTANCE]`: what the instances in shadow mode would have done, one line per item and rule,
 * oldest first. The list is the shadow proposals (decision 0031), so it is the same as `GET /api/shadow`.
 */
export async function shadowReportCommand(
  options: ShadowCommandOptions & { instance?: string; json?: boolean },
): Promise<void> {
  const { config } = await loadCliConfig(options);
  const { context, instance } = options;
  const configured = config.integrations.find((entry) => entry.name === instance);
  if (instance !== undefined && !configured) {
    throw new AssistantError('NOT_FOUND', `no integration instance \`${instance}\` in config.yaml`, {
      hint: `its instances: ${config.integrations.map((entry) => entry.name).join(', ') || 'none'}`,
    });
  }
  const notes = new FileNoteStore({ root: config.paths.notes });
  const report = await shadowReport({ notes, ...(instance === undefined ? {} : { instance }) });
  for (const broken of report.broken) context.stderr.write(`warning: ${broken}\n`);
  if (options.json) {
    context.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return;
  }
  const inShadow = config.integrations.filter((entry) => entry.shadow).map((entry) => entry.name);
  const lines: string[] = [];
  if (instance !== undefined && !configured?.shadow) {
    lines.push(`${instance} is not in shadow mode now: what follows is what it proposed while it was.`);
  } else if (instance === undefined) {
    lines.push(`in shadow mode: ${inShadow.length === 0 ? 'no instance' : inShadow.join(', ')}`);
  }
  if (report.entries.length === 0) {
    lines.push('no shadow proposals yet: nothing would have been done so far');
  } else {
    for (const entry of report.entries) {
      lines.push(
        `${formatLocalTime(new Date(entry.createdAt))}  ${entry.instance}  ${entry.title}`,
        `    would have: ${entry.wouldHave} (rule "${entry.rule}"; ${entry.id} ${entry.status})`,
      );
    }
    const pending = report.entries.filter((entry) => entry.status === 'pending').length;
    lines.push(
      '',
      `${report.entries.length} proposal${report.entries.length === 1 ? '' : 's'} (${pending} pending); nothing was done to any mailbox or account.`,
      'Each one in full: `assistant approvals show ID`. Leave shadow mode with `assistant shadow off INSTANCE`.',
    );
  }
  context.stdout.write(`${lines.join('\n')}\n`);
}

/**
 * `assistant shadow off INSTANCE`: sets `shadow: false` on the instance in config.yaml, keeping every comment and the
 * order of keys (the `yaml` Document API finds the value's place in the file, and only those characters change), written to a temporary file and renamed
 * over config.yaml so a crash never leaves half a file. Running processes keep the config they loaded: the change
 * takes effect when they restart, and until then their gate still refuses every action of the instance.
 */
export async function shadowOffCommand(options: ShadowCommandOptions & { instance: string }): Promise<void> {
  const { config } = await loadCliConfig(options);
  const { context, instance } = options;
  const configured = config.integrations.find((entry) => entry.name === instance);
  if (!configured) {
    throw new AssistantError('NOT_FOUND', `no integration instance \`${instance}\` in config.yaml`, {
      hint: `its instances: ${config.integrations.map((entry) => entry.name).join(', ') || 'none'}`,
    });
  }
  const file = config.paths.configFile;
  if (!configured.shadow) {
    context.stdout.write(`${instance} is not in shadow mode (${path.basename(file)} says so): nothing to change\n`);
    return;
  }
  const source = await readFile(file, 'utf8');
  const document = parseDocument(source);
  const list = document.get('integrations', true);
  const node = isSeq(list)
    ? list.items.find((item) => isMap(item) && item.get('name') === instance && item.get('shadow') === true)
    : undefined;
  if (!isMap(node)) {
    // Loaded config says shadow, but the file does not hold `shadow: true` where this edit can change it (it came
    // from an anchor or a merge key): say so instead of guessing.
    throw new AssistantError('CONFLICT', `cannot find \`shadow: true\` under instance \`${instance}\` in ${file}`, {
      hint: 'set `shadow: false` on the instance by hand',
    });
  }
  // Only the value's own characters change: the rest of the file (comments, spacing, flow style) stays byte for byte.
  const value = node.get('shadow', true);
  const range = isScalar(value) ? value.range : undefined;
  if (!range) throw new AssistantError('CONFLICT', `cannot locate \`shadow: true\` of \`${instance}\` in ${file}`);
  const edited = `${source.slice(0, range[0])}false${source.slice(range[1])}`;
  const check = parseDocument(edited).get('integrations', true);
  const changed = isSeq(check) ? check.items.find((item) => isMap(item) && item.get('name') === instance) : undefined;
  if (!isMap(changed) || changed.get('shadow') !== false) {
    throw new AssistantError('CONFLICT', `editing ${file} did not set \`shadow: false\` on \`${instance}\``, {
      hint: 'set it by hand',
    });
  }
  const mode = (await stat(file)).mode & 0o777;
  const temporary = `${file}.${randomUUID()}.tmp`;
  try {
    await writeFile(temporary, edited, { mode });
    await rename(temporary, file);
  } finally {
    await rm(temporary, { force: true });
  }
  const notes = new FileNoteStore({ root: config.paths.notes });
  const report = await shadowReport({ notes, instance });
  const pending = report.entries.filter((entry) => entry.status === 'pending');
  context.stdout.write(
    `${[
      `${instance} left shadow mode: ${path.basename(file)} now says \`shadow: false\`.`,
      'Restart Assistant (`assistant start`) for the running server and worker to act on it; until then they still only propose.',
      pending.length === 0
        ? 'No shadow proposal is pending.'
        : `${pending.length} shadow proposal${pending.length === 1 ? ' is' : 's are'} pending: after the restart approve one with \`assistant approve ID\` (it then runs) or reject it with \`assistant reject ID\`; \`assistant shadow report ${instance}\` lists them.`,
    ].join('\n')}\n`,
  );
}
