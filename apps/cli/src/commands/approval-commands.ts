import { readFile } from 'node:fs/promises';
import {
  type ApprovalRequest,
  approvalRendering,
  decideApproval,
  decideApprovals,
  describeAction,
  describeApproval,
  fitRendering,
  listApprovals,
  readApproval,
  requestManualAction,
  statusWithOutcome,
  withRendering,
} from '@assistant/actions';
import { AssistantError } from '@assistant/errors';
import { FileHumanLog, FileNoteStore } from '@assistant/notes';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';
import { openCommandQueue, writeJson } from '../open-cli-queue.ts';

export interface ApprovalCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
  json?: boolean;
}

/** `assistant approvals [--status S]`: the requests waiting for a person (or all of them), newest first. */
export async function approvalsListCommand(
  options: ApprovalCommandOptions & { status?: string; all?: boolean },
): Promise<void> {
  const { config } = await loadCliConfig(options);
  const notes = new FileNoteStore({ root: config.paths.notes });
  const status = options.all ? undefined : ((options.status ?? 'pending') as ApprovalRequest['status']);
  const requests = await listApprovals(notes, {
    ...(status ? { status } : {}),
    onBroken: (message) => options.context.stderr.write(`warning: skipped ${message}\n`),
  });
  if (options.json) return writeJson(options.context, requests.map(withRendering));
  if (requests.length === 0) {
    options.context.stdout.write(`no ${status ?? ''} approval requests\n`.replace('  ', ' '));
    return;
  }
  for (const request of requests) {
    options.context.stdout.write(
      `${request.id}  ${statusWithOutcome(request).padEnd(8)}  ${describeApproval(request)} for ${request.title}\n` +
        (request.kind === 'tool_call'
          ? `    agent tool call of ${request.instance}: ${request.reason}; expires ${request.expires_at}\n`
          : request.kind === 'hook'
            ? `    hook "${request.rule}": ${request.reason}; expires ${request.expires_at}\n`
            : `    rule "${request.rule}" of ${request.instance}/${request.platform}: ${request.reason}; expires ${request.expires_at}\n`) +
        renderingLines(request, listedRenderingMaxChars),
    );
  }
}

/** How much of each request's rendering the list prints; `assistant approvals show ID` prints all of it. */
const listedRenderingMaxChars = 4_000;

/**
 * What the request will do, indented under it: the whole rendering, or its beginning and how many characters more
 * (never cut without saying so). A request made before approvals were bound says it cannot be approved.
 */
function renderingLines(request: ApprovalRequest, maxChars: number): string {
  const { rendering, bound } = approvalRendering(request);
  const shown = fitRendering({ rendering, maxChars, id: request.id });
  const lines = shown.split('\n').map((line) => `      ${line}`);
  const unbound = bound
    ? []
    : ['    (made before approvals were bound to what they show: it cannot be approved; reject it to be asked again)'];
  return `${['    what will happen:', ...lines, ...unbound].join('\n')}\n`;
}

/** `assistant approvals show ID`: one request, with what it will do in full. */
export async function approvalShowCommand(options: ApprovalCommandOptions & { id: string }): Promise<void> {
  const { config } = await loadCliConfig(options);
  const notes = new FileNoteStore({ root: config.paths.notes });
  const request = await readApproval(notes, options.id);
  if (!request) throw new AssistantError('NOT_FOUND', `no approval request ${options.id}`);
  if (options.json) return writeJson(options.context, withRendering(request));
  const { rendering, bound } = approvalRendering(request);
  options.context.stdout.write(
    [
      `${request.id}  ${request.status}${request.decided_by ? ` by ${request.decided_by} at ${request.decided_at ?? '?'}` : ''}`,
      request.kind === 'tool_call'
        ? `agent tool call of ${request.instance}: ${request.reason}`
        : request.kind === 'hook'
          ? `hook "${request.rule}": ${request.reason}`
          : `rule "${request.rule}" of ${request.instance}/${request.platform}: ${request.reason}`,
      `item: ${request.item}`,
      `expires: ${request.expires_at}`,
      ...(request.outcome
        ? [
            `outcome: ${request.outcome} at ${request.outcome_at ?? '?'}${request.outcome_reason ? `: ${request.outcome_reason}` : ''}${request.outcome_task ? ` (task ${request.outcome_task})` : ''}`,
          ]
        : []),
      ...(request.digest ? [`digest: ${request.digest}`] : []),
      ...(bound
        ? []
        : ['made before approvals were bound to what they show: it cannot be approved; reject it to be asked again']),
      ...(request.refusals ?? []).map(
        (refusal) => `refused ${refusal.task ? `task ${refusal.task} ` : ''}at ${refusal.at}: ${refusal.reason}`,
      ),
      '',
      'what will happen, in full:',
      rendering,
      '',
      `approve with \`assistant approve ${request.id}\`, reject with \`assistant reject ${request.id}\``,
      '',
    ].join('\n'),
  );
}

/** `assistant approve ID` / `assistant reject ID`. */
export async function approvalDecideCommand(
  options: ApprovalCommandOptions & { id: string; decision: 'approve' | 'reject' },
): Promise<void> {
  const { config } = await loadCliConfig(options);
  const notes = new FileNoteStore({ root: config.paths.notes });
  const queue = await openCommandQueue({ config, context: options.context });
  const result = await decideApproval({
    notes,
    queue,
    humanLog: new FileHumanLog({ directory: config.paths.logs }),
    id: options.id,
    decision: options.decision,
    by: 'cli',
    inShadow: (name) => config.integrations.some((entry) => entry.name === name && entry.shadow),
  });
  if (options.json) return writeJson(options.context, { ...result.request, enqueued: result.enqueued ?? [] });
  if (options.decision === 'reject') {
    options.context.stdout.write(`rejected ${options.id}: nothing will be done\n`);
    return;
  }
  if (result.request.kind === 'tool_call') {
    options.context.stdout.write(
      `approved ${options.id}: the waiting agent loop runs ${describeApproval(result.request)}\n`,
    );
    return;
  }
  const enqueued = result.enqueued ?? [];
  options.context.stdout.write(
    `approved ${options.id}: ${enqueued.length === 0 ? 'every action was taken already' : enqueued.map((entry) => `${entry.key} (task ${entry.task})`).join(', ')}\n`,
  );
}

/**
 * `assistant approve ID[@DIGEST] ID[@DIGEST] …` (and `reject`): several decisions at once, through the same code as
 * the dashboard's and `POST /api/approvals/bulk` (decideApprovals). `@DIGEST` binds a request to the digest the
 * person was shown (`assistant approvals show ID` prints it): one that has changed since is refused alone and left
 * pending. Exit 1 when any was refused, after deciding the others.
 */
export async function approvalsDecideManyCommand(
  options: ApprovalCommandOptions & { shown: readonly string[]; decision: 'approve' | 'reject' },
): Promise<number> {
  const approvals = options.shown.map((entry) => {
    const at = entry.indexOf('@');
    return at === -1 ? { id: entry } : { id: entry.slice(0, at), digest: entry.slice(at + 1) };
  });
  const { config } = await loadCliConfig(options);
  const outcome = await decideApprovals({
    notes: new FileNoteStore({ root: config.paths.notes }),
    queue: await openCommandQueue({ config, context: options.context }),
    humanLog: new FileHumanLog({ directory: config.paths.logs }),
    decision: options.decision,
    approvals,
    by: 'cli',
    inShadow: (name) => config.integrations.some((entry) => entry.name === name && entry.shadow),
  });
  if (options.json) writeJson(options.context, outcome);
  else {
    const past = options.decision === 'approve' ? 'approved' : 'rejected';
    for (const decided of outcome.decided) {
      options.context.stdout.write(
        `${past} ${decided.id}${decided.tasks.length > 0 ? `: tasks ${decided.tasks.join(', ')}` : ''}\n`,
      );
    }
    for (const refused of outcome.refused) options.context.stderr.write(`refused ${refused.id}: ${refused.reason}\n`);
  }
  return outcome.refused.length > 0 ? 1 : 0;
}

/**
 * `assistant act INSTANCE PLATFORM NOTE ACTION [ARGUMENT]`: a person takes one platform action on one item by hand.
 * It is recorded as an approval note approved by `cli` at once, and the act task cites it: the worker's gate checks
 * it like every other. An irreversible action is still taken only once per item; one that can be undone each time.
 */
export async function actCommand(
  options: ApprovalCommandOptions & {
    instance: string;
    platform: string;
    note: string;
    action: string;
    argument?: string | undefined;
    /** The words a reply or comment sends (`--text`, or `--text-file`'s contents). */
    text?: string | undefined;
    textFile?: string | undefined;
  },
): Promise<void> {
  const text = await actText(options);
  const { config, registry } = await loadCliConfig(options);
  const notes = new FileNoteStore({ root: config.paths.notes });
  const queue = await openCommandQueue({ config, context: options.context });
  const result = await requestManualAction({
    registry,
    notes,
    queue,
    humanLog: new FileHumanLog({ directory: config.paths.logs }),
    instance: options.instance,
    platform: options.platform,
    notePath: options.note,
    action: options.action,
    ...(options.argument === undefined ? {} : { argument: options.argument }),
    ...(text === undefined ? {} : { text }),
    by: 'cli',
  });
  if (options.json)
    return writeJson(options.context, { ...result.approval, enqueued: result.enqueued, skipped: result.skipped });
  const what = result.approval.actions.map((action) => describeAction(action)).join(', ');
  options.context.stdout.write(
    result.enqueued.length === 0
      ? `${what} was taken on ${options.note} already: nothing to do (approval ${result.approval.id})\n`
      : `${what} for ${options.note}: task ${result.enqueued[0]?.task} (approval ${result.approval.id})\n`,
  );
}

/** `--text` or `--text-file`: the words a person writes for a reply or comment they ask for by hand. */
async function actText(options: {
  text?: string | undefined;
  textFile?: string | undefined;
}): Promise<string | undefined> {
  if (options.text !== undefined && options.textFile !== undefined) {
    throw new AssistantError('USAGE', 'give the text once: --text or --text-file, not both');
  }
  if (options.textFile === undefined) return options.text;
  try {
    return await readFile(options.textFile, 'utf8');
  } catch (error) {
    throw new AssistantError('USAGE', `cannot read --text-file ${options.textFile}: ${(error as Error).message}`);
  }
}
