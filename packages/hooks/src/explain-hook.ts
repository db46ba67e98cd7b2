import type { Provenance } from '@assistant/automations';
import { AssistantError } from '@assistant/errors';
import { type EventRecord, type EventRegistry, eventId } from '@assistant/events';
import * as z from 'zod';
import { type AskHook, actionNeedsApproval, decideHook, effectiveProvenance } from './decide-hook.ts';
import type { CompiledHook, HookDecision } from './hook-types.ts';
import { summarizeAction } from './render-hook-action.ts';
import type { HookState } from './runner/hook-runner.ts';

/** A hook as compiled, for people and for JSON: what `GET /api/hooks/:name`, `hooks test` and the dashboard show. */
export interface HookDescription {
  name: string;
  file: string;
  line: number;
  version: string;
  description?: string;
  on: string;
  /** Each fast-path test in the automations' condition language, as written (`from contains "@accountant"`). */
  conditions: string[];
  ask?: { question: string; llm?: string };
  once: boolean;
  count?: { at_least: number; within_ms: number; per?: string };
  debounce_ms?: number;
  for_ms?: number;
  catch_up: 'once' | 'all' | 'skip';
  provenance: Provenance;
  approval: boolean;
  /** Each `then:` entry unrendered (templates as written), its tier and whether it waits for the owner's approval. */
  actions: { kind: string; summary: string; tier: string; yolo: boolean; needs_approval: boolean }[];
}

export function describeHook(hook: CompiledHook): HookDescription {
  const provenance = effectiveProvenance(hook);
  return {
    name: hook.name,
    file: hook.file,
    line: hook.line,
    version: hook.version,
    ...(hook.description === undefined ? {} : { description: hook.description }),
    on: hook.on,
    conditions: hook.conditions.map((condition) => condition.text),
    ...(hook.ask ? { ask: { ...hook.ask } } : {}),
    once: hook.once,
    ...(hook.count
      ? {
          count: {
            at_least: hook.count.atLeast,
            within_ms: hook.count.withinMs,
            ...(hook.count.per === undefined ? {} : { per: hook.count.per }),
          },
        }
      : {}),
    ...(hook.debounceMs === undefined ? {} : { debounce_ms: hook.debounceMs }),
    ...(hook.forMs === undefined ? {} : { for_ms: hook.forMs }),
    catch_up: hook.catchUp,
    provenance,
    approval: hook.approval,
    actions: hook.actions.map((action) => ({
      kind: action.kind,
      summary: summarizeAction(action),
      tier: action.tier,
      yolo: action.yolo,
      needs_approval: actionNeedsApproval(action, provenance, hook.approval),
    })),
  };
}

/** An event written by hand for a dry run: its type and data, the rest optional (as stored, or as a producer says). */
export const testEventSchema = z.looseObject({
  type: z.string().min(1),
  data: z.record(z.string(), z.unknown()).default({}),
  id: z.string().optional(),
  source: z.string().optional(),
  native_id: z.string().optional(),
  at: z.string().optional(),
  caused_by: z.array(z.string()).optional(),
});

/**
 * The event record a dry run decides on, from an event written by hand (a file, a request body): its `data` checked
 * against the registry as the ledger checks it, so a payload that breaks its schema gets its `problem` and fires
 * nothing, as it would for real. Nothing is stored.
 */
export function eventForTest(options: { input: unknown; registry: EventRegistry; nowMs?: number }): EventRecord {
  const parsed = testEventSchema.safeParse(options.input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AssistantError(
      'HOOK_TEST_EVENT_INVALID',
      `the test event is not an event: ${issue?.path.join('.') || '(top level)'}: ${issue?.message ?? 'invalid'}`,
      {
        hint: 'write {"type": "mail.received", "data": {...}} (an event id, or a line of data/events/*.jsonl, works too)',
      },
    );
  }
  const input = parsed.data;
  const source = input.source ?? 'test';
  const nativeId = input.native_id ?? 'dry-run';
  const problem = options.registry.check(input.type, input.data);
  return {
    id: input.id ?? eventId(input.type, source, nativeId),
    type: input.type,
    at: input.at ?? new Date(options.nowMs ?? Date.now()).toISOString(),
    source,
    native_id: nativeId,
    ...(input.caused_by ? { caused_by: input.caused_by } : {}),
    data: input.data,
    ...(problem === undefined ? {} : { problem }),
  };
}

/** What a dry run shows: the hook, the event it was tried on and the decision (fast path, slow path, actions). */
export interface HookDryRun {
  hook: HookDescription;
  event: EventRecord;
  decision: HookDecision;
  /** `asked` when the model (or its cache) answered; `not asked` for a hook with `ask:` tried without asking. */
  slowPath: 'none' | 'asked' | 'not asked' | 'not reached';
}

/**
 * A dry run of one hook against one event: `decideHook` without the runner, so nothing is enqueued, recorded or
 * fired. The model is called only when `ask` is given (`hooks test --ask`, `{ask: true}`); its verdict lands in the
 * ask cache as the runner's would, the one file a dry run may write.
 */
export async function dryRunHook(options: {
  hook: CompiledHook;
  event: EventRecord;
  ask?: AskHook;
  nowMs?: number;
}): Promise<HookDryRun> {
  const decision = await decideHook({
    hook: options.hook,
    event: options.event,
    ...(options.nowMs === undefined ? {} : { nowMs: options.nowMs }),
    ...(options.ask ? { ask: options.ask } : {}),
  });
  const slowPath = !options.hook.ask
    ? 'none'
    : decision.slowPath
      ? 'asked'
      : decision.fastPath.passed
        ? 'not asked'
        : 'not reached';
  return { hook: describeHook(options.hook), event: options.event, decision, slowPath };
}

/** The dry run as text, for `assistant hooks test` (the dashboard renders the same parts as HTML). */
export function formatDryRun(run: HookDryRun): string {
  const { decision } = run;
  const show = (value: unknown) => {
    const text = JSON.stringify(value) ?? 'undefined';
    return text.length > 120 ? `${text.slice(0, 120)}…` : text;
  };
  const lines = [
    `hook ${run.hook.name} (${run.hook.file}:${run.hook.line}) on ${run.hook.on}, ${run.hook.provenance} provenance`,
    `event ${run.event.id} ${run.event.type} at ${run.event.at}${run.event.problem ? ` (problem: ${run.event.problem})` : ''}`,
    '',
    `Fast path: ${decision.fastPath.passed ? 'passed' : 'failed'}`,
  ];
  for (const check of decision.fastPath.checks) {
    lines.push(`  ${check.passed ? 'holds' : 'fails'}: ${check.text} (saw ${show(check.value)})`);
  }
  if (decision.fastPath.checks.length === 0) lines.push('  no conditions');
  lines.push(`Slow path: ${slowPathLine(run)}`);
  lines.push(`Actions${decision.fire ? '' : ' (not taken: it would not fire)'}:`);
  for (const entry of decision.actions) {
    lines.push(
      `  ${entry.summary} [${entry.action.tier.replace('_', ' ')}${entry.action.yolo ? ', !yolo' : ''}]: ${entry.needsApproval ? 'waits for approval' : 'runs without approval'}`,
    );
  }
  lines.push('', `Decision: ${decision.fire ? 'FIRES' : 'does not fire'}: ${decision.reason}`);
  lines.push('(a dry run: nothing was enqueued, recorded or fired)');
  return `${lines.join('\n')}\n`;
}

function slowPathLine(run: HookDryRun): string {
  switch (run.slowPath) {
    case 'none':
      return 'none (the hook has no `ask:`)';
    case 'not reached':
      return `not reached (the fast path failed); the question: ${JSON.stringify(run.hook.ask?.question)}`;
    case 'not asked':
      return `not asked (pass --ask to call the model); the question: ${JSON.stringify(run.hook.ask?.question)}`;
    case 'asked': {
      const verdict = run.decision.slowPath;
      return `${verdict?.fire ? 'fire' : 'do not fire'}: ${verdict?.reason ?? ''}${verdict?.cached ? ' (from the ask cache)' : ' (the model answered)'}`;
    }
  }
}

/** A hook's state as JSON: snake_case like every body of the API. */
export function hookStateJson(state: HookState) {
  return {
    name: state.name,
    on: state.on,
    enabled: state.enabled,
    once: state.once,
    fired_once: state.firedOnce,
    ...(state.lastFiredAt === undefined ? {} : { last_fired_at: state.lastFiredAt }),
    firings: state.firings,
    breaker: {
      state: state.breaker.state,
      failures: state.breaker.failures,
      ...(state.breaker.openedAt === undefined ? {} : { opened_at: state.breaker.openedAt }),
    },
    timers: state.timers.map((timer) => ({ key: timer.key, kind: timer.kind, due_at: timer.dueAt })),
    missed: state.missed,
  };
}

/** The dry run as JSON. */
export function dryRunJson(run: HookDryRun) {
  const { decision } = run;
  return {
    hook: run.hook,
    event: run.event,
    fire: decision.fire,
    reason: decision.reason,
    fast_path: decision.fastPath,
    slow_path: { status: run.slowPath, ...(decision.slowPath ? { verdict: decision.slowPath } : {}) },
    provenance: decision.provenance,
    actions: decision.actions.map((entry) => ({
      kind: entry.action.kind,
      summary: entry.summary,
      tier: entry.action.tier,
      yolo: entry.action.yolo,
      needs_approval: entry.needsApproval,
    })),
  };
}
