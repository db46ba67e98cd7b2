import { createHash } from 'node:crypto';
import type { HumanLog, NoteStore } from '@assistant/notes';
import { formatDuration } from '@assistant/queue';
import {
  type ApprovalRequest,
  approvalsFolder,
  describeApproval,
  expireApproval,
  isWithdrawn,
  readApproval,
  recordRefusal,
  renderingSection,
  withdrawApproval,
  withdrawnBy,
} from './approvals.ts';
import { type ApprovalRendering, renderToolCall } from './render-approval.ts';
import { type ToolPolicy, type ToolTier, toolVerdict } from './tool-policy.ts';

/**
 * One tool call as the gate reads it: the part of `@assistant/agent`'s ToolGateRequest it needs, spelled out here
 * so the approvals layer does not depend on the agent loop (a ToolGate accepts this function as it is).
 */
export interface ToolCallGateRequest {
  tool: { name: string; tier: ToolTier };
  input: unknown;
  call: { id: string };
  signal: AbortSignal;
  handle: { lineage: readonly string[] };
  waiting(approval: string): void;
}

/** Options of {@link createToolCallGate}. */
export interface CreateToolCallGateOptions {
  notes: NoteStore;
  humanLog?: Pick<HumanLog, 'write'>;
  /** config.yaml's `tools:` patterns. */
  policy: ToolPolicy;
  /** How long a call waits for the owner's decision before it is refused and its request expires (`tools.approval_timeout`). */
  approvalTimeoutMs: number;
  /** The task whose loops the gate guards; its id (with the loop and the call id) names each request. */
  task: { id: string };
  /** The task's instance, for the request's `instance` and `domain`. */
  instance: { name: string; domain: string };
  /** The note the request links to (the loop's transcript), so the owner can read what led to the call. */
  item: string;
  /**
   * How often a waiting call reads its request.
   * @default 500
   */
  pollIntervalMs?: number;
  /** @default Date.now */
  now?: () => number;
}

/** Whether the call runs; a refusal's reason is what the model reads after `error: refused:`. */
export type ToolCallGateDecision = { run: true } | { run: false; reason: string };

/**
 * The gate every agent loop of a task asks before a tool call: config.yaml's `tools:` and the tool's tier decide
 * (see {@link toolVerdict}); a call that needs the owner becomes an approval request (kind `tool_call`) in
 * `approvals/` and waits, polling the note, until it is approved (the call runs, once), rejected, expired or the loop
 * is stopped. The request's id comes from the task, the loop and the call, so a loop replayed after a worker crash
 * finds its request instead of asking again, and an approved call records `tool_ran_at` under the note's lock
 * before it runs, so it never runs twice. A loop stopped while it waits withdraws its request (nobody would run the
 * call on it); the same call asked again reopens it.
 */
export function createToolCallGate(
  options: CreateToolCallGateOptions,
): (request: ToolCallGateRequest) => Promise<ToolCallGateDecision> {
  const now = options.now ?? Date.now;
  const pollIntervalMs = options.pollIntervalMs ?? 500;
  const source = `task ${options.task.id}`;
  return async (request) => {
    const { tool } = request;
    const verdict = toolVerdict({ name: tool.name, tier: tool.tier, policy: options.policy });
    if (verdict.verdict === 'run') return { run: true };
    if (verdict.verdict === 'deny') {
      await options.humanLog?.write({ source, message: `refused a call to ${tool.name}`, reason: verdict.because });
      return { run: false, reason: `${verdict.because}: the owner does not let this tool run; do not call it again` };
    }

    const argumentsJson = JSON.stringify(request.input) ?? 'null';
    const id = toolCallApprovalId({
      taskId: options.task.id,
      lineage: request.handle.lineage,
      callId: request.call.id,
      tool: tool.name,
      argumentsJson,
    });
    const loop = request.handle.lineage.join(' › ');
    // What the owner is shown and what this call will run with: the approval binds to its digest.
    const rendered = renderToolCall({
      tool: tool.name,
      tier: tool.tier,
      loop,
      task: options.task.id,
      input: request.input,
    });
    const existing = await readApproval(options.notes, id);
    // A request withdrawn when the loop that asked stopped (a shutdown, a crashed worker) is asked again: reopened.
    const reopened = existing !== undefined && isWithdrawn(existing) && (await reopenRequest(options, id, now()));
    if (existing === undefined || reopened) {
      if (existing === undefined) {
        await createRequest(options, {
          id,
          loop,
          request,
          argumentsJson,
          rendered,
          because: verdict.because,
          nowMs: now(),
        });
      }
      await options.humanLog?.write({
        source,
        message: `waits for approval${reopened ? ' again' : ''} to call ${tool.name} (${loop})`,
        reason: verdict.because,
        link: `${approvalsFolder}/${id}.md`,
      });
    }
    request.waiting(id);

    try {
      return await waitForDecision(options, {
        id,
        tool: tool.name,
        digest: rendered.digest,
        signal: request.signal,
        now,
        pollIntervalMs,
      });
    } catch (error) {
      // The loop stopped while its call waited (stopped, timed out, the worker shutting down): nobody will run the
      // call on this request any more, so it leaves the owner's list rather than wait there for its expiry.
      if (request.signal.aborted) await withdrawAfterStop(options, id, now(), request.signal.reason);
      throw error;
    }
  };
}

/** Polls the request until it is decided or expires; throws when the signal is aborted. */
async function waitForDecision(
  options: CreateToolCallGateOptions,
  wait: {
    id: string;
    tool: string;
    /** The digest of the call as it will run. */
    digest: string;
    signal: AbortSignal;
    now: () => number;
    pollIntervalMs: number;
  },
): Promise<ToolCallGateDecision> {
  const { id, tool, signal, now } = wait;
  for (;;) {
    signal.throwIfAborted();
    const current = await readApproval(options.notes, id);
    if (current === undefined) {
      return { run: false, reason: `approval request ${id} was deleted before anyone decided it` };
    }
    if (current.status === 'approved') {
      const refused = bindingProblem(current, wait.digest);
      if (refused === undefined) return claimRun(options.notes, current);
      await recordRefusal(options.notes, { id, task: options.task.id, reason: refused, nowMs: now() });
      await options.humanLog?.write({
        source: `task ${options.task.id}`,
        message: `refused to call ${tool} on approval ${id}`,
        reason: refused,
        link: `${approvalsFolder}/${id}.md`,
      });
      return { run: false, reason: `refused: ${refused}` };
    }
    if (current.status === 'rejected') {
      return {
        run: false,
        reason: `the owner rejected calling ${tool} (approval ${id}); do not call it again with these arguments`,
      };
    }
    if (isWithdrawn(current)) {
      // Another attempt of this task withdrew it (this worker had been taken for dead): that attempt runs now.
      return { run: false, reason: `approval request ${id} was withdrawn: another attempt of this task runs now` };
    }
    if (current.status === 'expired' || Date.parse(current.expires_at) <= now()) {
      // Decided a moment before it could be expired (the deciding clock a little behind ours): read the decision.
      if (current.status === 'pending' && !(await expireApproval(options, current, now()))) continue;
      return {
        run: false,
        reason: `no decision within ${formatDuration(options.approvalTimeoutMs)} (approval ${id} expired)`,
      };
    }
    await sleep(Math.min(wait.pollIntervalMs, Math.max(0, Date.parse(current.expires_at) - now())), signal);
  }
}

/**
 * Why an approved call must not run: the approval binds to the digest of the rendering the owner read, and the call
 * about to run renders to another (the note was edited, or it holds no digest: made before approvals were bound).
 */
function bindingProblem(request: ApprovalRequest, digest: string): string | undefined {
  if (request.digest === undefined) {
    return `approval ${request.id} was made before approvals were bound to what they show (its note has no digest); ask again`;
  }
  if (request.digest === digest) return undefined;
  return `the call is not the one approval ${request.id} showed the owner (approved ${request.digest}, this call ${digest}); nothing was run`;
}

/**
 * Sets a withdrawn request pending again, with a new expiry, under the note's lock. False when it is no longer
 * withdrawn (someone reopened or deleted it meanwhile), and the caller reads it as it is.
 */
async function reopenRequest(options: CreateToolCallGateOptions, id: string, nowMs: number): Promise<boolean> {
  let reopened = false;
  try {
    await options.notes.update(`${approvalsFolder}/${id}.md`, {
      change: (current) => {
        reopened = current.data.status === 'expired' && current.data.decided_by === withdrawnBy;
        if (!reopened) return {};
        const expiresAt = new Date(nowMs + options.approvalTimeoutMs).toISOString();
        return {
          set: { status: 'pending', expires_at: expiresAt, decided_at: undefined, decided_by: undefined },
          // The body says when it expires, too.
          body: current.body.replace(`it expires at ${String(current.data.expires_at)}`, `it expires at ${expiresAt}`),
        };
      },
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return false;
  }
  return reopened;
}

/** Withdraws the request of a call whose loop stopped; a failure only leaves it pending until it expires. */
async function withdrawAfterStop(
  options: CreateToolCallGateOptions,
  id: string,
  nowMs: number,
  reason: unknown,
): Promise<void> {
  try {
    const current = await readApproval(options.notes, id);
    if (current?.status !== 'pending') return;
    const why = reason instanceof Error ? reason.message : String(reason ?? 'stopped');
    await withdrawApproval(options, current, nowMs, `the loop that asked stopped before a decision (${why})`);
  } catch {
    // Left pending: it expires at its time, and approving it runs nothing.
  }
}

/**
 * `ap-` and 12 hex digits of the task, the loop's lineage, the call id, the tool and its arguments: the same call gets
 * the same request. The tool and arguments are in it because call ids come from the model's server, which may reuse
 * or leave them empty; without them a call with other arguments could run on the approval of an earlier one.
 */
function toolCallApprovalId(parts: {
  taskId: string;
  lineage: readonly string[];
  callId: string;
  tool: string;
  argumentsJson: string;
}): string {
  const { taskId, lineage, callId, tool, argumentsJson } = parts;
  const digest = createHash('sha256')
    .update(JSON.stringify(['tool_call', taskId, lineage, callId, tool, argumentsJson]))
    .digest('hex');
  return `ap-${digest.slice(0, 12)}`;
}

async function createRequest(
  options: CreateToolCallGateOptions,
  parts: {
    id: string;
    loop: string;
    request: ToolCallGateRequest;
    argumentsJson: string;
    rendered: ApprovalRendering;
    because: string;
    nowMs: number;
  },
): Promise<void> {
  const { id, loop, request, nowMs } = parts;
  const json = parts.argumentsJson;
  const approval: ApprovalRequest = {
    id,
    kind: 'tool_call',
    status: 'pending',
    created_at: new Date(nowMs).toISOString(),
    expires_at: new Date(nowMs + options.approvalTimeoutMs).toISOString(),
    instance: options.instance.name,
    domain: options.instance.domain,
    platform: 'agent',
    rule: 'tool gate',
    // The model chose the call and its arguments.
    provenance: 'llm',
    reason: parts.because,
    item: options.item,
    title: `task ${options.task.id} (${loop})`,
    actions: [],
    tool_call: {
      tool: request.tool.name,
      tier: request.tool.tier,
      // In full: what the owner reads is what runs, however long (a memo's tail can name where it goes).
      arguments: json,
      task: options.task.id,
      loop,
      call_id: request.call.id,
    },
    rendering: parts.rendered.rendering,
    digest: parts.rendered.digest,
  };
  const body = [
    `# Approve ${describeApproval(approval)} for ${approval.title}?`,
    '',
    `The agent loop ${loop} of task ${options.task.id} wants to call \`${request.tool.name}\` (${request.tool.tier.replace('_', ' ')}),`,
    `and it waits for a person because ${parts.because}.`,
    '',
    // In full: what runs is what the owner can read here, tail included.
    ...renderingSection(approval),
    `What led to it: [${options.item}](../${options.item})`,
    '',
    `Approve with \`assistant approve ${id}\` (the call runs once) or reject with \`assistant reject ${id}\` (the model`,
    `is told you said no). Unless decided, it expires at ${approval.expires_at} and the call is refused.`,
    '',
  ].join('\n');
  try {
    await options.notes.create(`${approvalsFolder}/${id}.md`, { data: approval as never, body });
  } catch (error) {
    // The same call asked a moment ago (a replayed loop racing its predecessor): the same request.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** Records under the note's lock that the approved call runs now; refuses when it ran before (a replayed loop). */
async function claimRun(notes: NoteStore, request: ApprovalRequest): Promise<ToolCallGateDecision> {
  let ranAt: string | undefined;
  await notes.update(`${approvalsFolder}/${request.id}.md`, {
    change: (current) => {
      const recorded = (current.data as { tool_ran_at?: unknown }).tool_ran_at;
      ranAt = typeof recorded === 'string' ? recorded : undefined;
      return ranAt === undefined ? { set: { tool_ran_at: new Date().toISOString() } } : {};
    },
  });
  if (ranAt !== undefined) {
    return {
      run: false,
      reason: `this approved call already ran at ${ranAt} (approval ${request.id}); it is not run twice — its result was lost when the loop restarted`,
    };
  }
  return { run: true };
}

/** Waits `ms`, or rejects with the abort reason as soon as `signal` is aborted. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
