import { AssistantError } from '@assistant/errors';
import type { HumanLog, NoteStore } from '@assistant/notes';
import type { JsonValue, Task, TaskQueue } from '@assistant/queue';
import { stringify } from 'yaml';
import * as z from 'zod';
import type { ActionRegistry } from './action-registry.ts';
import { renderInputs, renderTemplate } from './render-template.ts';

/** Keys the runtime writes on a service-result note; a result cannot set them (they say where it came from). */
export const auditKeys = ['service', 'instance', 'task', 'requested_by', 'inputs', 'routed_at'] as const;

const routeSchema = z.union([
  z.strictObject({ note: z.union([z.literal(true), z.string().min(1)]) }),
  z.strictObject({ enqueue: z.string().min(1), payload: z.record(z.string(), z.unknown()).optional() }),
]);
const onResultSchema = z.looseObject({
  routes: z.array(routeSchema).optional(),
  human_log: z.string().optional(),
  requested_by: z.record(z.string(), z.unknown()).optional(),
});

export interface RouteServiceResultOptions {
  task: Task;
  result: JsonValue;
  notes: NoteStore;
  queue: TaskQueue;
  humanLog?: Pick<HumanLog, 'write'>;
  registry?: ActionRegistry;
  nowMs?: number;
}

export interface RoutedResult {
  notes: string[];
  enqueued: string[];
}

/**
 * Sends a service's result where its `on_result` says, after the result is safe in the done task: `{note: true}`
 * (the default) writes `notes/services/{domain}/{service}/{task}.md`, `{note: folder}` a note in that folder,
 * `{enqueue: type}` feeds the result to another task. Every route is tried; the first failure is thrown after the
 * others ran, and the result stays in done/ for `assistant task reroute`. Routing again rewrites the same notes.
 */
export async function routeServiceResult(options: RouteServiceResultOptions): Promise<RoutedResult> {
  const { task } = options;
  const [, domain = '', service = ''] = task.type.split('.');
  const parsed = onResultSchema.safeParse(task.onResult ?? {});
  if (!parsed.success)
    throw new Error(`on_result of task ${task.id} is not understood: ${parsed.error.issues[0]?.message}`);
  const onResult = parsed.data;
  const routes = onResult.routes ?? [{ note: true as const }];
  const inputs = (
    task.payload !== null && typeof task.payload === 'object' && !Array.isArray(task.payload)
      ? ((task.payload as { inputs?: unknown }).inputs ?? {})
      : {}
  ) as Record<string, unknown>;
  const routedAt = new Date(options.nowMs ?? Date.now()).toISOString();
  const audit = {
    service: `${domain}.${service}`,
    instance: task.integration ?? domain,
    task: task.id,
    ...(onResult.requested_by ? { requested_by: onResult.requested_by } : {}),
    inputs,
    routed_at: routedAt,
  };
  const routed: RoutedResult = { notes: [], enqueued: [] };
  const failures: unknown[] = [];
  for (const route of routes) {
    try {
      if ('note' in route) routed.notes.push(await writeResultNote(options, route.note, domain, service, audit));
      else routed.enqueued.push(await enqueueResult(options, route, audit));
    } catch (error) {
      failures.push(error);
    }
  }
  const template =
    onResult.human_log ??
    options.registry?.integrations.find((candidate) => candidate.manifest.domain === domain)?.manifest.services[service]
      ?.human_log;
  if (failures.length === 0 && template) {
    await options.humanLog?.write({
      source: `service.${domain}.${service}`,
      message: renderTemplate(template, { inputs, result: options.result, task: task.id }),
      ...(routed.notes[0] ? { link: routed.notes[0] } : {}),
    });
  }
  if (failures.length > 0) throw failures[0];
  return routed;
}

async function writeResultNote(
  options: RouteServiceResultOptions,
  target: true | string,
  domain: string,
  service: string,
  audit: Record<string, unknown>,
): Promise<string> {
  const folder = target === true ? `services/${domain}/${service}` : target.replace(/\/+$/, '');
  const notePath = `${folder}/${options.task.id}.md`;
  const { result } = options;
  const fields: Record<string, unknown> = {};
  let body = '';
  if (result !== null && typeof result === 'object' && !Array.isArray(result)) {
    for (const [key, value] of Object.entries(result)) {
      if (key === 'body' && typeof value === 'string') body = value;
      // The audit keys are written below and win: a service cannot say it was another service or task.
      else if (!(auditKeys as readonly string[]).includes(key)) fields[key] = value;
    }
  } else fields.result = result;
  if (body === '') body = `\`\`\`yaml\n${stringify(result ?? null, { lineWidth: 0 })}\`\`\`\n`;
  const data = { ...fields, ...audit } as never;
  const existing = await options.notes.read(notePath);
  if (existing) await options.notes.update(notePath, { set: data, body });
  else await options.notes.create(notePath, { data, body });
  return notePath;
}

async function enqueueResult(
  options: RouteServiceResultOptions,
  route: { enqueue: string; payload?: Record<string, unknown> | undefined },
  audit: Record<string, unknown>,
): Promise<string> {
  const data = { result: options.result, inputs: audit.inputs, task: options.task.id };
  const payload = route.payload
    ? renderInputs(route.payload as Record<string, string | number | boolean>, data)
    : { result: options.result, from_task: options.task.id };
  const target = options.registry?.taskType(route.enqueue);
  if (options.registry && !target) throw new Error(`on_result enqueues ${route.enqueue}, which no integration handles`);
  // The instance the result goes to: whoever asked for it, or the service's own, when it is of the target's domain.
  const requestedBy = (audit.requested_by as { instance?: unknown } | undefined)?.instance;
  const integration = [requestedBy, options.task.integration].find(
    (name): name is string =>
      typeof name === 'string' && (!target || options.registry?.instance(name)?.domain === target.domain),
  );
  const outcome = await options.queue.enqueue({
    type: route.enqueue,
    payload: payload as JsonValue,
    source: 'automation',
    ...(integration ? { integration } : {}),
  });
  if (outcome.status === 'enqueued') return outcome.task.id;
  if (outcome.status === 'duplicate') return outcome.existing;
  throw new Error(`could not enqueue ${route.enqueue}: ${outcome.reason}`);
}

/** `assistant task reroute ID`: routes a done service task's result again, after a route failed. */
export async function rerouteTask(
  options: Omit<RouteServiceResultOptions, 'task' | 'result'> & { id: string },
): Promise<RoutedResult> {
  // The queue answers NOT_FOUND, or CONFLICT for a task that is not done or cannot be read.
  const task = await options.queue.reroute(options.id);
  if (!task.type.startsWith('service.')) {
    throw new AssistantError('CONFLICT', `task ${options.id} is a ${task.type} task; only service results are routed`);
  }
  return routeServiceResult({ ...options, task, result: task.result ?? null });
}
