import { AssistantError } from '@assistant/errors';
import { type ControlEvent, ControlFiles, type SteeringAction, steeringActions } from '@assistant/steering';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';
import { openCliQueue, writeJson } from '../open-cli-queue.ts';

export interface SteerCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
  id: string;
  action: string;
  words: string[];
  json?: boolean;
}

/**
 * `assistant steer ID pause|resume|stop [reason]|interject MSG|ask QUESTION|answer CLARIFICATION-ID TEXT`: writes a
 * steering request for the worker and waits for it to be applied (for `ask`, for the answer).
 */
export async function steerCommand(options: SteerCommandOptions): Promise<void> {
  const action = options.action as SteeringAction;
  if (!(steeringActions as readonly string[]).includes(action)) {
    throw new AssistantError('USAGE', `unknown steering action \`${options.action}\``, {
      hint: `use one of: ${steeringActions.join(', ')}`,
    });
  }
  const words = [...options.words];
  const clarification = action === 'answer' ? words.shift() : undefined;
  const text = words.join(' ').trim();
  if ((action === 'interject' || action === 'ask' || action === 'answer') && text === '') {
    throw new AssistantError(
      'USAGE',
      `\`${action}\` needs ${action === 'answer' ? 'a clarification id and the answer' : 'a message'}`,
      {
        hint:
          action === 'answer'
            ? 'assistant steer ID answer CLARIFICATION-ID your answer'
            : `assistant steer ID ${action} "your ${action === 'ask' ? 'question' : 'message'}"`,
      },
    );
  }
  const { config } = await loadCliConfig(options);
  const queue = await openCliQueue(options);
  const record = await queue.get(options.id);
  if (!record) throw new AssistantError('NOT_FOUND', `no task with id ${options.id}`);
  if (record.state === 'done' || record.state === 'failed') {
    throw new AssistantError(
      'CONFLICT',
      `task ${options.id} is ${record.state}; only pending or active tasks can be steered`,
    );
  }
  const files = new ControlFiles({ root: config.paths.control, taskId: options.id });
  const request = await files.request({
    action,
    source: 'cli',
    ...(action === 'stop' && text ? { reason: text } : {}),
    ...(action === 'interject' || action === 'ask' || action === 'answer' ? { message: text } : {}),
    ...(clarification ? { clarification_id: clarification } : {}),
  });
  const outcome = await files.waitForOutcome(request.id, { timeoutMs: action === 'ask' ? 120_000 : 5_000 });
  if (options.json) return writeJson(options.context, { request: request.id, ...(outcome ?? { status: 'queued' }) });
  if (!outcome) {
    options.context.stdout.write(`${action} queued (${request.id}): task ${options.id} applies it when it runs\n`);
    return;
  }
  if (outcome.status === 'refused')
    throw new AssistantError('CONFLICT', `${action} was refused: ${outcome.message ?? 'no reason given'}`);
  options.context.stdout.write(action === 'ask' ? `${outcome.answer ?? ''}\n` : `${action}: applied\n`);
}

/** `assistant task watch ID`: prints the task's events as they happen, until it has finished. */
export async function taskWatchCommand(options: {
  globals: GlobalOptions;
  context: CliContext;
  id: string;
  json?: boolean;
}): Promise<void> {
  const { config } = await loadCliConfig(options);
  const queue = await openCliQueue(options);
  if (!(await queue.get(options.id))) throw new AssistantError('NOT_FOUND', `no task with id ${options.id}`);
  const files = new ControlFiles({ root: config.paths.control, taskId: options.id });
  let offset = 0;
  for (;;) {
    const batch = await files.eventsFrom(offset);
    for (const event of batch.events) {
      options.context.stdout.write(options.json ? `${JSON.stringify(event)}\n` : `${formatEvent(event)}\n`);
    }
    offset = batch.offset;
    const state = (await queue.get(options.id))?.state;
    if ((state === 'done' || state === 'failed') && batch.events.length === 0) {
      if (!options.json) options.context.stdout.write(`task ${options.id} is ${state}\n`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function formatEvent(event: ControlEvent): string {
  const time = event.at.slice(11, 19);
  const lineage = event.lineage && event.lineage.length > 0 ? ` [${event.lineage.join(' › ')}]` : '';
  const { type, at: _at, lineage: _lineage, offset: _offset, ...rest } = event;
  const detail =
    typeof rest.message === 'string'
      ? rest.message
      : typeof rest.question === 'string'
        ? `${rest.question}${typeof rest.id === 'string' ? ` (answer with: assistant steer … answer ${rest.id} …)` : ''}`
        : JSON.stringify(rest);
  return `${time}${lineage} ${type}: ${detail}`;
}
