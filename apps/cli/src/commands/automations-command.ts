import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  describeOutcome,
  describeSeen,
  type ExplainedRule,
  explainItem,
  type ItemExplanation,
} from '@assistant/actions';
import { type ConfigProblem, formatProblem, parseAutomations } from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import { FileNoteStore } from '@assistant/notes';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';
import { writeJson } from '../open-cli-queue.ts';

export interface AutomationsExplainOptions {
  globals: GlobalOptions;
  context: CliContext;
  /** The item's note: relative to the notes folder, or a path to the file inside it. */
  note: string;
  /** A file of automations to try instead of the configured ones. */
  rule?: string | undefined;
  platform?: string | undefined;
  json?: boolean | undefined;
}

/**
 * `assistant automations explain NOTE [--rule FILE]`: each automation of the item's platform, in order, with whether
 * it matched and why (each condition with the value it saw), each action's tier, provenance and gate, and what was
 * done or is waiting. With `--rule FILE`, the file's automations instead of config.yaml's: a dry run of a rule being
 * written. The same explanation the dashboard's note page shows.
 */
export async function automationsExplainCommand(options: AutomationsExplainOptions): Promise<void> {
  const { context } = options;
  const { config, registry } = await loadCliConfig(options);
  const notes = new FileNoteStore({ root: config.paths.notes });
  let dryRun:
    | { automations: NonNullable<ReturnType<typeof parseAutomations>['automations']>; file: string }
    | undefined;
  let locate: ReturnType<typeof parseAutomations>['locate'] | undefined;
  if (options.rule !== undefined) {
    const file = path.resolve(context.cwd, options.rule);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      throw new AssistantError('USAGE', `cannot read the rule file ${options.rule}: ${(error as Error).message}`);
    }
    const parsed = parseAutomations({ text, file: options.rule });
    if (!parsed.automations) throw ruleFileError(options.rule, parsed.errors);
    dryRun = { automations: parsed.automations, file: options.rule };
    locate = parsed.locate;
  }
  const explained = await explainItem({
    registry,
    config,
    notes,
    notePath: notePathOf(options.note, config.paths.notes, context.cwd, config.paths.dataDir),
    platform: options.platform,
    ...(dryRun ? { dryRun } : {}),
  });
  if (explained.problems.length > 0 && locate && options.rule !== undefined) {
    const where = locate;
    throw ruleFileError(
      options.rule,
      explained.problems.map((problem) =>
        where(problem.index, problem.path, { message: problem.message, hint: problem.hint, at: problem.at }),
      ),
    );
  }
  if (options.json) return writeJson(context, explained);
  context.stdout.write(formatExplanation(explained));
}

function ruleFileError(file: string, problems: readonly ConfigProblem[]): AssistantError {
  const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
  return new AssistantError('CONFIG_INVALID', `${file} has ${count}:\n${problems.map(formatProblem).join('\n')}`, {
    hint: "a rule file holds one automation or a list, written as under a platform's `automations:` in config.yaml",
  });
}

/** A note path relative to the notes folder, from either that or a path to the file (`data/notes/email/…`). */
function notePathOf(note: string, notesRoot: string, cwd: string, dataDir: string): string {
  const absolute = path.resolve(cwd, note);
  if (absolute.startsWith(notesRoot + path.sep)) return path.relative(notesRoot, absolute).split(path.sep).join('/');
  // `notes/email/…`, as the dashboard and the API show a note's file (relative to the data directory).
  const fromData = path.resolve(dataDir, note);
  if (!path.isAbsolute(note) && fromData.startsWith(notesRoot + path.sep) && !existsSync(path.join(notesRoot, note))) {
    return path.relative(notesRoot, fromData).split(path.sep).join('/');
  }
  return note;
}

/** The readable explanation `assistant automations explain` prints. */
function formatExplanation(explained: ItemExplanation): string {
  const from = explained.rulesFrom === 'config' ? 'config.yaml' : `${explained.rulesFrom.file} (a dry run)`;
  const lines = [
    `${explained.item}: ${explained.title}`,
    `an item of ${explained.instance}/${explained.platform} (${explained.domain}); rules from ${from}, evaluated at ${explained.evaluatedAt}`,
    '',
  ];
  if (explained.rules.length === 0) lines.push('No automations: nothing is decided for this item.', '');
  for (const rule of explained.rules) lines.push(...formatRule(rule), '');
  lines.push('Done:');
  if (explained.taken.length === 0) lines.push('  nothing recorded on the item');
  for (const entry of explained.taken) {
    lines.push(
      `  ${entry.action}${entry.rule ? ` by rule "${entry.rule}"` : ''}${entry.provenance ? ` (${entry.provenance})` : ''}${entry.at ? ` at ${entry.at}` : ''}${entry.task ? `, task ${entry.task}` : ''}${entry.approval ? `, approval ${entry.approval}` : ''}`,
    );
  }
  for (const entry of explained.started) lines.push(`  started ${entry.action}${entry.at ? ` at ${entry.at}` : ''}`);
  lines.push('Approvals:');
  if (explained.approvals.length === 0) lines.push('  none for this item');
  for (const request of explained.approvals) {
    lines.push(
      `  ${request.id} ${request.status} (rule "${request.rule}")${request.status === 'pending' ? `, expires ${request.expires_at}` : request.decided_by ? ` by ${request.decided_by}` : ''}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

function formatRule(rule: ExplainedRule): string[] {
  const verdict = rule.paused
    ? `PAUSED (${rule.paused}): not applied`
    : rule.stoppedBy !== undefined
      ? `not evaluated: rule "${rule.stoppedBy}" held and has stop: true`
      : rule.match
        ? 'MATCHED'
        : rule.conditionsHold
          ? 'conditions hold, but the gate allows none of its actions'
          : 'not matched';
  const lines = [
    `${rule.index + 1}. "${rule.name}": ${verdict} (${rule.provenance} provenance${rule.approval ? ', approval required' : ''}${rule.stop ? ', stop: true' : ''})`,
  ];
  for (const condition of rule.conditions) {
    lines.push(
      `   ${condition.holds ? 'holds' : 'fails'}: ${condition.group ? `[${condition.group}] ` : ''}${condition.text} (${condition.subject}; ${describeSeen(condition)})`,
    );
  }
  for (const action of rule.actions) {
    lines.push(
      `   action ${action.action.key} [${action.action.tier.replace('_', ' ')}${action.action.yolo ? ', !yolo' : ''}]: ${action.gate}; ${describeOutcome(action.outcome, rule.name)}`,
    );
  }
  return lines;
}
