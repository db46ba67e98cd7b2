import path from 'node:path';
import { decideApproval, findService, listApprovals, proposeAction, readApproval } from '@assistant/actions';
import { loadPersonas, loadWorkflows, personaNamesOf, runNotePath, startWorkflowRun } from '@assistant/agents';
import { AssistantError, scrubSecretsDeep } from '@assistant/errors';
import type { ChatConsole, IntegrationRegistry, TriggerOutcome } from '@assistant/integration-host';
import type { EnqueueOutcome, Task } from '@assistant/queue';
import { steeringChannel, type WorkerServices } from './worker-services.ts';

/** How long `steer` waits for the worker running the task to apply the request before answering `queued`. */
const steerWaitMs = 3_000;

/**
 * The console of a chat turn (HandlerContext.console, for the builtin chat integration only): each part is the
 * function the CLI and the REST API call for the same thing, with `chat` as who did it (for a workflow run, its
 * task's source).
 */
export function createChatConsole(
  services: WorkerServices & { registry: IntegrationRegistry },
  task: Task,
  signal: AbortSignal,
): ChatConsole {
  const { queue, notes, humanLog, registry, config } = services;
  return {
    tasks: {
      get: async (id) => {
        const record = await queue.get(id);
        // Results and errors are scrubbed when they enter a task; the payload is written as given (its hash names
        // the file), so it is scrubbed here, on its way out.
        return record ? scrubSecretsDeep(record) : undefined;
      },
      list: (options) => queue.list(options),
    },
    approvals: {
      list: (options = {}) => listApprovals(notes, options),
      read: (id) => readApproval(notes, id),
      decide: ({ id, decision }) =>
        decideApproval({
          notes,
          queue,
          humanLog,
          id,
          decision,
          by: 'chat',
          inShadow: (name) => registry.instance(name)?.shadow === true,
        }),
      propose: ({ conversation, instance, platform, item, action, reason }) =>
        proposeAction({
          registry,
          notes,
          humanLog,
          scripts: config.scripts,
          instance,
          platform,
          notePath: item,
          action,
          reason,
          origin: { conversation, task: task.id },
          expiresMs: config.approvals.expiresMs,
        }),
    },
    trigger: async ({ instance, platform }) => {
      const entry = registry.entryTask(instance, platform);
      if (!entry.ok) throw new AssistantError(entry.status === 404 ? 'NOT_FOUND' : 'CONFLICT', entry.message);
      const outcome = await queue.enqueue({
        type: entry.type,
        payload: entry.payload,
        priority: entry.priority,
        integration: entry.integration,
        source: 'automation',
      });
      return described(entry.type, outcome);
    },
    enqueueService: async ({ conversation, call, inputs }) => {
      const service = findService(registry, call);
      if (!service.reversible) {
        throw new AssistantError(
          'CONFLICT',
          `service \`${call}\` cannot be undone: it runs only when a person approves it (propose it for an item)`,
        );
      }
      const outcome = await queue.enqueue({
        type: service.type,
        payload: { inputs },
        integration: service.instance,
        priority: registry.taskType(service.type)?.priority ?? 5,
        source: 'automation',
        // Fixed here: the result goes where a service's result goes by default, and says who asked.
        onResult: { routes: [{ note: true }], requested_by: { chat: conversation, task: task.id } },
      });
      return described(service.type, outcome);
    },
    steer: async ({ task: id, action, message, reason }) => {
      if (id === task.id) throw new AssistantError('BAD_REQUEST', 'a chat turn does not steer itself');
      const record = await queue.get(id);
      if (!record) throw new AssistantError('NOT_FOUND', `no task with id ${id}`);
      if (record.state === 'done' || record.state === 'failed') {
        throw new AssistantError(
          'CONFLICT',
          `task ${id} is ${record.state}; only pending or active tasks can be steered`,
        );
      }
      if (record.name?.type.startsWith('chat.')) {
        throw new AssistantError('BAD_REQUEST', `task ${id} is a chat turn: a conversation is steered by its messages`);
      }
      const channel = steeringChannel(services, id);
      const request = await channel.request({
        action,
        ...(message === undefined ? {} : { message }),
        ...(reason === undefined ? {} : { reason }),
        source: `chat:${task.id}`,
      });
      // A pending task gets it when it starts; an active one applies it at its next step, which is worth a moment.
      const outcome =
        record.state === 'active'
          ? await channel.waitForOutcome(request.id, { timeoutMs: steerWaitMs, signal })
          : undefined;
      if (!outcome) return { request: request.id, status: 'queued' };
      return {
        request: request.id,
        status: outcome.status,
        ...(outcome.message === undefined ? {} : { message: outcome.message }),
      };
    },
    runWorkflow: async ({ conversation, workflow, input }) => {
      const started = await startWorkflowRun({
        queue,
        configDir: path.dirname(config.paths.configFile),
        notesRoot: config.paths.notes,
        workflow,
        input,
        // Not `cli` or `api`: the input is the chat model's words, so the runner fences it for every agent.
        source: 'chat',
        // The answer goes back to this conversation, through this turn's chat instance (the one its task runs as,
        // named on the task or the only chat instance there is).
        replyTo: { conversation, ...chatInstanceOf(registry, task) },
      });
      await humanLog.write({
        source: 'chat',
        message: `started ${started.workflow.topology} workflow ${started.workflow.name}: run ${started.run}`,
        reason: `asked in conversation ${conversation}`,
        link: runNotePath(started.run),
      });
      return {
        run: started.run,
        task: started.task,
        workflow: started.workflow.name,
        topology: started.workflow.topology,
      };
    },
    workflows: async () => {
      // Only the workflows a run would accept: a persona each names is checked as startWorkflowRun checks it.
      const configDir = path.dirname(config.paths.configFile);
      const personas = await loadPersonas({ configDir, notesRoot: config.paths.notes });
      const { workflows } = await loadWorkflows({ configDir, personas: personaNamesOf(personas) });
      return [...workflows.values()].map((each) => ({
        name: each.name,
        topology: each.topology,
        ...(each.description === undefined ? {} : { description: each.description }),
      }));
    },
  };
}

/** The chat instance a chat turn runs as, for its workflow runs' replies; none found: the default (`chat`). */
function chatInstanceOf(registry: IntegrationRegistry, task: Task): { instance?: string } {
  const found = registry.instanceForTask(task);
  return found.ok ? { instance: found.instance.name } : {};
}

function described(type: string, outcome: EnqueueOutcome): TriggerOutcome {
  if (outcome.status === 'enqueued') return { status: 'enqueued', task: outcome.task.id, type };
  if (outcome.status === 'duplicate') {
    return { status: 'duplicate', task: outcome.existing, type, reason: outcome.reason };
  }
  return {
    status: 'rate_limited',
    type,
    reason: outcome.reason,
    retry_at: new Date(outcome.retryAtMs).toISOString(),
  };
}
