import type { TaskQueue, TaskState } from '@assistant/queue';
import { type ControlEvent, ControlFiles } from '@assistant/steering';
import { html, type SafeHtml } from './html.ts';
import { timeTag } from './layout.ts';
import type { LiveHub } from './live.ts';

/** The newest events a task page shows (an agent that ran for hours has thousands; `assistant task watch` has all). */
export const shownEventLimit = 200;

/** How often the live `task` topic looks at the task's events file for new lines. */
const eventPollMs = 250;
/** How often it also reads the task's state, in case the queue's events missed a change. */
const statePollMs = 2_000;

/** Longest text of one event shown in the list (a tool result or a long interjection is cut). */
const eventTextLimit = 500;

export type TaskEventLine = ControlEvent & { offset: number };

/** A task's state as a badge. */
function stateBadge(state: TaskState | string): SafeHtml {
  return html`<span class="badge ${state}">${state}</span>`;
}

/**
 * What a finished task's own result says went wrong: an agent loop that failed or was stopped still completes its task
 * (its transcript and reason are the result), so `done` alone would read as success. Undefined when the result does
 * not say so.
 */
export function resultOutcome(result: unknown): { status: string; reason: string } | undefined {
  if (result === null || typeof result !== 'object' || Array.isArray(result)) return undefined;
  const { status, reason, error } = result as Record<string, unknown>;
  if (status !== 'failed' && status !== 'stopped' && status !== 'cancelled') return undefined;
  const why = typeof reason === 'string' ? reason : typeof error === 'string' ? error : '';
  return { status, reason: why };
}

/** The state badge, and beside a done task whose result says it failed or stopped, that outcome. */
export function stateWithOutcome(state: TaskState | string, result: unknown): SafeHtml {
  const outcome = state === 'done' ? resultOutcome(result) : undefined;
  if (!outcome) return stateBadge(state);
  return html`${stateBadge(state)} <span class="badge bad">${outcome.status === 'failed' ? 'agent failed' : `agent ${outcome.status}`}</span>`;
}

/** A clarification the agent asked for, and whether it was answered. */
export interface Clarification {
  id: string;
  question: string;
  answered: boolean;
}

function text(value: unknown): string {
  if (value === undefined || value === null) return '';
  const shown = typeof value === 'string' ? value : JSON.stringify(value);
  return shown.length > eventTextLimit ? `${shown.slice(0, eventTextLimit)}…` : shown;
}

/** One line of what an event says, without its type and time (those are shown around it). */
function describe(event: ControlEvent): SafeHtml {
  switch (event.type) {
    case 'step-started':
      return html`step ${text(event.step)} started`;
    case 'step-finished':
      return html`step ${text(event.step)} finished, ${text(event.toolCalls)} tool call(s)`;
    case 'tool-started':
      return html`<code>${text(event.toolName)}</code> started`;
    case 'tool-finished':
      return html`<code>${text(event.toolName)}</code> ${event.succeeded === false ? 'failed' : 'finished'}`;
    case 'approval-wait':
      return html`<code>${text(event.toolName)}</code> waits for <a href="/approvals#${text(event.approval)}">approval ${text(event.approval)}</a>`;
    case 'approval-decided':
      return html`<code>${text(event.toolName)}</code> ${event.run === true ? 'approved: it runs' : html`refused: ${text(event.reason)}`}`;
    case 'steering': {
      const detail = event.action === 'ask' ? event.question : (event.message ?? event.reason);
      return html`<strong>${text(event.action)}</strong>${detail === undefined ? '' : html`: ${text(detail)}`}`;
    }
    case 'steering-applied':
      return html`the agent took <strong>${text(event.action)}</strong>: ${text(event.message)}`;
    case 'waiting-while-paused':
      return html`paused (waits before ${text(event.before)})`;
    case 'notification':
      return html`${text(event.message)}`;
    case 'clarification':
      return html`asks: ${text(event.question)}`;
    case 'compression':
      return html`compressed ${text(event.archivedMessages)} message(s)`;
    case 'done': {
      const result = event.result as { status?: unknown; answer?: unknown; reason?: unknown } | undefined;
      return html`finished: ${text(result?.status)}${result?.answer === undefined ? '' : html` — ${text(result.answer)}`}${result?.reason === undefined ? '' : html` (${text(result.reason)})`}`;
    }
    default: {
      const { type: _type, at: _at, lineage: _lineage, offset: _offset, ...rest } = event;
      return html`${text(rest)}`;
    }
  }
}

/** An event as a list item; `data-event` carries its type (tests and styles use it), `id` its offset. */
export function renderEvent(event: TaskEventLine): SafeHtml {
  const lineage = Array.isArray(event.lineage) && event.lineage.length > 1 ? event.lineage.slice(1).join(' › ') : '';
  return html`<li id="event-${event.offset}" data-event="${event.type}">${timeTag(typeof event.at === 'string' ? event.at : undefined)} <span class="event-type">${event.type}</span> ${lineage === '' ? '' : html`<span class="muted">[${lineage}]</span> `}${describe(event)}</li>`;
}

/** The clarifications among the events, each marked answered once a steering `answer` named it. */
export function clarificationsOf(events: readonly ControlEvent[]): Clarification[] {
  const found = new Map<string, Clarification>();
  for (const event of events) {
    if (event.type === 'clarification' && typeof event.id === 'string') {
      found.set(event.id, { id: event.id, question: text(event.question), answered: false });
    } else if (event.type === 'steering' && event.action === 'answer' && typeof event.clarification_id === 'string') {
      const clarification = found.get(event.clarification_id);
      if (clarification) clarification.answered = true;
    }
  }
  return [...found.values()];
}

/** A task's events as the page shows them: every event read (for clarifications), the newest few to list. */
export async function readTaskEvents(
  controlRoot: string,
  id: string,
): Promise<{ events: TaskEventLine[]; offset: number }> {
  return new ControlFiles({ root: controlRoot, taskId: id }).eventsFrom(0);
}

/** `<id>@<offset>`: the task and the byte offset its page's list ends at (what the live topic sends from). */
export function parseTaskTopicParam(param: string): { id: string; offset: number } | undefined {
  const match = /^([0-9a-z]{26})(?:@(\d{1,15}))?$/.exec(param);
  if (!match?.[1]) return undefined;
  return { id: match[1], offset: Number(match[2] ?? 0) };
}

/**
 * The live `task` topic (`/live?task=<id>@<offset>`): new events as list items (`task-events`, appended by the page)
 * and the task's state when it changes, and once at the start (`task-state`, which makes the page fetch its summary). Ends when the
 * client leaves; after the task finished it keeps sending nothing but stays open (the page's other topics go on).
 */
export function registerTaskTopic(live: LiveHub, options: { queue: () => TaskQueue; controlRoot: string }): void {
  live.registerTopic('task', async ({ param, send, signal }) => {
    const parsed = parseTaskTopicParam(param);
    if (!parsed) {
      send('problem', 'not a task id');
      return;
    }
    const queue = options.queue();
    const files = new ControlFiles({ root: options.controlRoot, taskId: parsed.id });
    let offset = parsed.offset;
    let state: TaskState | undefined;
    let wake = () => {};
    const unsubscribe = live.subscribe((event, data) => {
      if (event !== 'queue') return;
      try {
        const change = JSON.parse(data) as { id?: string };
        if (change.id === parsed.id) wake();
      } catch {
        // Not ours to judge.
      }
    });
    try {
      state = (await queue.get(parsed.id))?.state;
      // The page was rendered before this stream opened: the task may have moved on meanwhile (or this is a
      // reconnect), so the page fetches its summary once now, after this topic read the state it compares with.
      send('task-state', state ?? 'removed');
      let nextStateMs = Date.now() + statePollMs;
      let woken = false;
      while (!signal.aborted) {
        if (woken || Date.now() >= nextStateMs) {
          const now = (await queue.get(parsed.id))?.state;
          if (now !== state) {
            state = now;
            send('task-state', state ?? 'removed');
          }
          nextStateMs = Date.now() + statePollMs;
        }
        const batch = await files.eventsFrom(offset);
        if (batch.events.length > 0) send('task-events', batch.events.map((event) => renderEvent(event)).join(''));
        offset = batch.offset;
        woken = await new Promise<boolean>((resolve) => {
          const done = (value: boolean) => {
            clearTimeout(timer);
            signal.removeEventListener('abort', abort);
            resolve(value);
          };
          const abort = () => done(false);
          const timer = setTimeout(() => done(false), eventPollMs);
          signal.addEventListener('abort', abort, { once: true });
          wake = () => done(true);
        });
        wake = () => {};
      }
    } finally {
      unsubscribe();
    }
  });
}
