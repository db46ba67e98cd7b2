import { actionKey, type ResolvedAction } from '@assistant/automations';
import { AssistantError } from '@assistant/errors';
import type { HumanLog, NoteStore } from '@assistant/notes';
import type { ActionRegistry } from './action-registry.ts';
import { type ApprovalRequest, approvalsFolder, bindApproval, readApproval, renderingSection } from './approvals.ts';
import { findItem, itemTitle, readArgument } from './manual-action.ts';
import { approvalId, describe, plannedForApproval } from './planned-action.ts';

/** An action a chat's model wants taken on one item: a platform action, a script of config.yaml, or a service. */
export interface ProposedAction {
  kind: 'platform' | 'script' | 'service';
  /** The platform action (`send_card`), the script's name under `scripts:`, or the service call `domain.instance.service`. */
  name: string;
  /** A platform action's argument, when the manifest gives it one. */
  argument?: string | number | boolean | undefined;
  /** A script's or a service's inputs: plain values (templates are refused: the owner approves what runs). */
  inputs?: Record<string, string | number | boolean> | undefined;
  /**
   * The full words a platform action sends or posts (a `send_reply`, a GitHub `comment`), written by the model now:
   * the owner reads them in the request and exactly they are sent once approved.
   */
  text?: string | undefined;
}

export interface ProposeActionOptions {
  registry: ActionRegistry;
  notes: NoteStore;
  humanLog?: Pick<HumanLog, 'write'>;
  /** config.yaml's `scripts:`; a script it does not list cannot be proposed. */
  scripts: Readonly<Record<string, { reversible: boolean }>>;
  /** The item the action is for: its instance, platform and note (under `{domain}/{instance}/`). */
  instance: string;
  platform: string;
  notePath: string;
  action: ProposedAction;
  /** Why the model wants it, in its words; shown to the owner on the request. */
  reason: string;
  /** The conversation and the turn task that proposed it: recorded on the request as its `origin`. */
  origin: { conversation: string; task: string };
  /** How long the request waits for the owner. */
  expiresMs: number;
  nowMs?: number;
}

/** An approval request made from a chat: where it came from. */
export interface ChatOrigin {
  chat: string;
  task: string;
}

/**
 * Turns an action a chat's model wants into an approval request the owner decides on (in the chat, `assistant
 * approve`, `POST /api/approvals/:id`). Nothing runs until a person approves it; then `decideApproval` enqueues it
 * through `enqueueApproved`, records it on the item and the worker's gate checks the task against this note, exactly
 * like a rule's request. The action must be one the action system knows for this item: a platform action of the
 * item's platform, a script of `scripts:`, or a service a manifest declares. Its provenance is `llm` (a model chose
 * it), so every action, reversible or not, is taken at most once per item. The id is derived from the item, the
 * action and the turn that proposed it: a turn run again after a crash finds its request instead of making another.
 */
export async function proposeAction(
  options: ProposeActionOptions,
): Promise<{ approval: ApprovalRequest; path: string; created: boolean }> {
  const nowMs = options.nowMs ?? Date.now();
  const { instance, platform, note } = await findItem(options);
  const resolved = resolveProposed(options, platform.actions, instance.domain);
  const taken = Array.isArray(note.data.actions_taken) ? (note.data.actions_taken as unknown[]) : [];
  const before = taken.find(
    (entry): entry is { action: string; at?: unknown } =>
      entry !== null && typeof entry === 'object' && (entry as { action?: unknown }).action === resolved.key,
  );
  if (before) {
    throw new AssistantError(
      'CONFLICT',
      `${describe(resolved)} was taken on ${options.notePath} already${typeof before.at === 'string' ? ` (${before.at})` : ''}; it is not taken twice`,
    );
  }
  const id = approvalId({
    instance: instance.name,
    platform: options.platform,
    notePath: options.notePath,
    keys: [resolved.key],
    nonce: `chat:${options.origin.conversation}:${options.origin.task}`,
  });
  const notePath = `${approvalsFolder}/${id}.md`;
  const existing = await readApproval(options.notes, id);
  if (existing) return { approval: existing, path: notePath, created: false };

  const planned = plannedForApproval(resolved, note.data);
  const title = itemTitle(note.data, options.notePath);
  const at = new Date(nowMs).toISOString();
  const origin: ChatOrigin = { chat: options.origin.conversation, task: options.origin.task };
  const unbound: ApprovalRequest = {
    id,
    status: 'pending',
    created_at: at,
    expires_at: new Date(nowMs + options.expiresMs).toISOString(),
    instance: instance.name,
    domain: instance.domain,
    platform: options.platform,
    rule: `chat ${options.origin.conversation}`,
    provenance: 'llm',
    reason: options.reason,
    item: options.notePath,
    title,
    actions: [planned],
    origin,
  };
  const approval = bindApproval(unbound, { path: options.notePath, data: note.data });
  const chatNote = `chats/${options.origin.conversation}.md`;
  const body = [
    `# Approve ${describe(planned)} for ${title}?`,
    '',
    `Proposed in the chat [${options.origin.conversation}](../${chatNote}) (turn task ${options.origin.task}); the`,
    `model's reason: ${options.reason}`,
    '',
    `- ${describe(planned)} (${planned.tier.replace('_', ' ')})`,
    '',
    `The item: [${options.notePath}](../${options.notePath})`,
    '',
    ...renderingSection(approval),
    `Approve in that chat (write its id), with \`assistant approve ${id}\` or reject with \`assistant reject ${id}\`.`,
    `Unless decided, it expires at ${approval.expires_at} and nothing happens.`,
    '',
  ].join('\n');
  try {
    await options.notes.create(notePath, { data: approval as never, body });
  } catch (error) {
    // The same turn proposed it a moment ago (a rerun): the same id, the same request.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const found = await readApproval(options.notes, id);
    if (!found) throw error;
    return { approval: found, path: notePath, created: false };
  }
  await options.humanLog?.write({
    source: `chat/${options.origin.conversation}`,
    message: `asked for approval to ${describe(planned)} for ${title}`,
    reason: `proposed in a chat: ${options.reason}`,
    link: notePath,
  });
  return { approval, path: notePath, created: true };
}

/** The proposed action as the action system knows it, or a clear error naming what it could be. */
function resolveProposed(
  options: ProposeActionOptions,
  platformActions: Record<
    string,
    {
      tier: ResolvedAction['tier'];
      argument?: 'string' | 'number' | 'boolean' | undefined;
      argument_optional?: boolean | undefined;
      target?: string | undefined;
    }
  >,
  domain: string,
): ResolvedAction {
  const { action } = options;
  if (action.kind !== 'platform' && action.argument !== undefined) {
    throw new AssistantError('BAD_REQUEST', `a ${action.kind} takes inputs, not an argument`);
  }
  if (action.kind !== 'platform' && action.text !== undefined) {
    throw new AssistantError('BAD_REQUEST', `a ${action.kind} takes inputs, not a text`);
  }
  if (action.kind === 'platform') {
    if (action.inputs !== undefined) throw new AssistantError('BAD_REQUEST', 'a platform action takes no inputs');
    const spec = platformActions[action.name];
    if (!spec) {
      const names = Object.keys(platformActions);
      throw new AssistantError(
        'BAD_REQUEST',
        `\`${action.name}\` is not an action of ${domain}.${options.platform}; its actions: ${names.join(', ') || 'none'}`,
      );
    }
    const argument = readArgument(action.name, spec.argument, action.argument, spec.argument_optional === true);
    return {
      kind: 'platform',
      name: action.name,
      ...(argument === undefined ? {} : { argument }),
      tier: spec.tier,
      yolo: false,
      key: actionKey(action.name, argument),
      ...(spec.target === undefined ? {} : { targetField: spec.target }),
      ...(action.text === undefined ? {} : { text: action.text }),
    };
  }
  const inputs = plainInputs(action.inputs ?? {});
  if (action.kind === 'script') {
    const script = options.scripts[action.name];
    if (!script) {
      const names = Object.keys(options.scripts);
      throw new AssistantError(
        'BAD_REQUEST',
        `\`${action.name}\` is not a script of config.yaml; its scripts: ${names.join(', ') || 'none'}`,
      );
    }
    return {
      kind: 'script',
      name: action.name,
      inputs,
      tier: script.reversible ? 'soft' : 'irreversible',
      yolo: false,
      key: `script:${action.name}`,
    };
  }
  const service = findService(options.registry, action.name);
  return {
    kind: 'service',
    name: action.name,
    inputs,
    tier: service.reversible ? 'soft' : 'irreversible',
    yolo: false,
    key: `service:${action.name}`,
  };
}

/**
 * The service a call `domain.instance.service` names, as its manifest declares it, for an instance of that domain (or
 * the domain's bare instance, for a service that needs no configuration). Throws a clear error otherwise.
 */
export function findService(
  registry: ActionRegistry,
  call: string,
): { domain: string; instance: string; service: string; type: string; reversible: boolean } {
  const [domain = '', instance = '', service = '', ...rest] = call.split('.');
  if (domain === '' || instance === '' || service === '' || rest.length > 0) {
    throw new AssistantError('BAD_REQUEST', `\`${call}\` is not a service call: write domain.instance.service`);
  }
  const type = `service.${domain}.${service}`;
  const info = registry.taskType(type);
  const declared = info?.kind === 'service' ? info.integration.manifest.services[service] : undefined;
  if (!declared) {
    const known = registry.integrations.flatMap((integration) =>
      Object.keys(integration.manifest.services).map((name) => `${integration.manifest.domain}.<instance>.${name}`),
    );
    throw new AssistantError(
      'NOT_FOUND',
      `no service \`${service}\` of ${domain}; services: ${known.join(', ') || 'none'}`,
    );
  }
  const found = registry.instanceForTask({ type, integration: instance });
  if (!found.ok || found.instance.name !== instance || found.instance.domain !== domain) {
    throw new AssistantError(
      'NOT_FOUND',
      `no ${domain} instance \`${instance}\`${found.ok ? '' : `: ${found.message}`}`,
    );
  }
  return { domain, instance, service, type, reversible: declared.reversible };
}

/** Inputs as given, refusing templates: `{{ … }}` would be filled from the item after the owner approved the text. */
function plainInputs(inputs: Record<string, string | number | boolean>): Record<string, string | number | boolean> {
  for (const [name, value] of Object.entries(inputs)) {
    if (typeof value === 'string' && /\{\{|\{%/.test(value)) {
      throw new AssistantError(
        'BAD_REQUEST',
        `input \`${name}\` holds a template ({{ }} or {% %}); give the value itself`,
      );
    }
  }
  return inputs;
}
