import { watch } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { AssistantError } from '@assistant/errors';
import type { EnqueueOutcome } from '@assistant/queue';
import type { GrantChain, Persona, PersonaBudget } from '../persona-types.ts';
import { childGrantChain, rootGrantChain } from '../personas/grant-chain.ts';
import type { ChildRecord, ChildResult, ChildState, SpawnRequest, SubAgents } from '../subagent-types.ts';
import {
  childIdFor,
  childOwner,
  childrenDir,
  countLiveChildren,
  deliverChildResult,
  inboxDir,
  listIds,
  markLive,
  readChildRecord,
  readChildResult,
  recordFile,
  writeOnce,
  writeReplace,
} from './agent-files.ts';

/** The parent a {@link FileSubAgents} spawns for: a loop's task and where it stands in its tree. */
export interface SubAgentParent {
  taskId: string;
  /** The parent's persona; absent for a workflow's runner, which is code, not a persona. */
  persona?: Persona;
  /** The parent's grants; absent for a runner: its children start from their own persona's grants. */
  grants?: GrantChain;
  /** 0 for a root. */
  depth: number;
  /** The deepest a child of this tree may be; a root sets it from its persona. */
  maxDepth: number;
  /** The most children alive at once. */
  maxChildren: number;
  rootTask: string;
  /** Labels from the root down to the parent. */
  lineage: string[];
  /** Task ids from the root down to the parent's parent. */
  ancestors: string[];
  /** A blackboard note children append their results to (inherited). */
  blackboard?: string;
  run?: string;
}

export interface FileSubAgentsOptions {
  /** `data/agents/`. */
  root: string;
  parent: SubAgentParent;
  /** Reads a persona by name (fresh each spawn: the owner edits them freely); throws PERSONA_UNKNOWN / PERSONA_INVALID. */
  persona(name: string): Promise<Persona>;
  /** Enqueues the child's task: `system.agent` with `{subagent: {parent, id}}`. */
  enqueue(payload: { subagent: { parent: string; id: string } }): Promise<EnqueueOutcome>;
  /** Where a child's task is (`pending`, `active`, `done`, `failed`), or undefined when the queue has no such task. */
  taskState?(taskId: string): Promise<string | undefined>;
  /** Interjects into a running child's loop (a steering request on its task). */
  interject(taskId: string, text: string): Promise<void>;
  /** The most children alive at once across the installation (config.yaml's `agents.max_live`). */
  maxLive: number;
  /** Told when a wait starts and ends: the worker gives the task's slot back meanwhile; `end` resolves once its code may go on. */
  parking?: { begin(): void; end(): void | Promise<void> };
  /** How often a wait looks at the inbox besides watching it. @default 500 */
  pollMs?: number;
}

const limitError = (message: string, hint: string) =>
  new AssistantError('AGENT_LIMIT', `AGENT_LIMIT: ${message}`, { hint });

/** The smaller of each: a spawn may ask a child to spend less than its persona allows, never more. */
function narrowBudget(persona: PersonaBudget, asked: Partial<PersonaBudget> | undefined): PersonaBudget {
  const smaller = (a: number | undefined, b: number | undefined) =>
    a === undefined ? b : b === undefined ? a : Math.min(a, b);
  const tokens = smaller(persona.tokens, asked?.tokens);
  const timeoutMs = smaller(persona.timeoutMs, asked?.timeoutMs);
  return {
    maxSteps: smaller(persona.maxSteps, asked?.maxSteps) ?? persona.maxSteps,
    ...(tokens === undefined ? {} : { tokens }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  };
}

/**
 * A parent's children as files under `data/agents/<parent-task>/` (see agent-files.ts), each child its own queue task.
 * Spawns are keyed: a parent that replays a step after a crash gets the children it already started.
 */
export class FileSubAgents implements SubAgents {
  readonly #options: FileSubAgentsOptions;
  /** Spawns of one parent one at a time, so two in one step cannot both slip under `max_children`. */
  #spawning: Promise<unknown> = Promise.resolve();

  constructor(options: FileSubAgentsOptions) {
    this.#options = options;
  }

  get parentTaskId(): string {
    return this.#options.parent.taskId;
  }

  get depth(): number {
    return this.#options.parent.depth;
  }

  spawn(request: SpawnRequest): Promise<{ id: string; taskId: string; existing: boolean }> {
    const next = this.#spawning.then(() => this.#spawn(request));
    this.#spawning = next.catch(() => {});
    return next;
  }

  async #spawn(request: SpawnRequest): Promise<{ id: string; taskId: string; existing: boolean }> {
    const { root, parent } = this.#options;
    const id = childIdFor(parent.taskId, request.key);
    const known = await readChildRecord(root, parent.taskId, id);
    if (known !== undefined) return { id, taskId: await this.#ensureTask(known), existing: true };

    const persona = await this.#options.persona(request.persona);
    const depth = parent.depth + 1;
    if (depth > parent.maxDepth) {
      throw limitError(
        `spawning ${persona.name} would make an agent at depth ${depth}; this tree allows ${parent.maxDepth}`,
        'do the work yourself, or hand it back to your caller',
      );
    }
    const live = await countLiveChildren(root, parent.taskId);
    if (live >= parent.maxChildren) {
      throw limitError(
        `${live} of your children are still running; at most ${parent.maxChildren} may run at once`,
        'wait for one with wait_agents before spawning another',
      );
    }
    const everywhere = await countLiveChildren(root);
    if (everywhere >= this.#options.maxLive) {
      throw limitError(
        `${everywhere} sub-agents are running in this installation; the cap (agents.max_live) is ${this.#options.maxLive}`,
        'wait for your children to finish, or do the work yourself',
      );
    }
    const record: ChildRecord = {
      id,
      key: request.key,
      parent_task: parent.taskId,
      persona: persona.name,
      ...(parent.persona === undefined ? {} : { parent_persona: parent.persona.name }),
      task: request.task,
      purpose: request.purpose ?? request.task.slice(0, 500),
      context: request.context ?? { mode: 'isolated' },
      depth,
      max_depth: parent.maxDepth,
      root_task: parent.rootTask,
      lineage: [...parent.lineage, persona.name],
      ancestors: [...parent.ancestors, parent.taskId],
      grants:
        parent.grants === undefined || parent.persona === undefined
          ? rootGrantChain(persona)
          : childGrantChain(parent.grants, parent.persona, persona),
      budget: narrowBudget(persona.budget, request.budget),
      ...((request.blackboard ?? parent.blackboard) === undefined
        ? {}
        : { blackboard: (request.blackboard ?? parent.blackboard) as string }),
      ...((request.run ?? parent.run) === undefined ? {} : { run: (request.run ?? parent.run) as string }),
      ...(request.maySpawn === undefined ? {} : { may_spawn: [...request.maySpawn] }),
      created_at: new Date().toISOString(),
    };
    const file = recordFile(root, parent.taskId, id);
    if ((await writeOnce(file, `${JSON.stringify(record, null, 2)}\n`)) === 'present') {
      const other = await readChildRecord(root, parent.taskId, id);
      if (other !== undefined) return { id, taskId: await this.#ensureTask(other), existing: true };
    }
    await markLive(root, parent.taskId, id);
    return { id, taskId: await this.#ensureTask(record), existing: false };
  }

  /** The child's task id, enqueuing its task when the record has none yet (a crash between the two writes). */
  async #ensureTask(record: ChildRecord): Promise<string> {
    // A task that claimed the child is the one running it, whatever the record says (see claimChild).
    const owner = await childOwner(this.#options.root, record.parent_task, record.id);
    if (owner !== undefined) return owner;
    if (record.task_id !== undefined) return record.task_id;
    const outcome = await this.#options.enqueue({ subagent: { parent: record.parent_task, id: record.id } });
    if (outcome.status !== 'enqueued') {
      throw new AssistantError('AGENT_LIMIT', `AGENT_LIMIT: the queue refused the child's task: ${outcome.reason}`);
    }
    const updated: ChildRecord = { ...record, task_id: outcome.task.id };
    await writeReplace(
      recordFile(this.#options.root, record.parent_task, record.id),
      `${JSON.stringify(updated, null, 2)}\n`,
    );
    return outcome.task.id;
  }

  result(id: string): Promise<ChildResult | undefined> {
    return readChildResult(this.#options.root, this.#options.parent.taskId, id);
  }

  async wait(
    ids: readonly string[],
    options: { timeoutMs: number; signal: AbortSignal },
  ): Promise<{ results: ChildResult[]; running: string[] }> {
    const { root, parent } = this.#options;
    for (const id of ids) {
      if ((await readChildRecord(root, parent.taskId, id)) === undefined) {
        throw new AssistantError('AGENT_UNKNOWN', `AGENT_UNKNOWN: ${id} is not a child of this agent`, {
          hint: 'list_agents names your children',
        });
      }
    }
    let lastReconciledMs = 0;
    const look = async () => {
      const results: ChildResult[] = [];
      const running: string[] = [];
      // Every few seconds, a child whose task is over without a result (failed for good, poisoned by worker deaths,
      // removed by a person) gets a failed result here, so its parent never waits for a child that cannot answer.
      const reconcile = Date.now() - lastReconciledMs >= 2_000;
      if (reconcile) lastReconciledMs = Date.now();
      for (const id of ids) {
        let result = await readChildResult(root, parent.taskId, id);
        if (result === undefined && reconcile) result = await this.#reconcile(id);
        if (result === undefined) running.push(id);
        else results.push(result);
      }
      return { results, running };
    };
    let seen = await look();
    if (seen.running.length === 0 || options.timeoutMs <= 0) return seen;
    options.signal.throwIfAborted();
    const directory = inboxDir(root, parent.taskId);
    await mkdir(directory, { recursive: true });
    this.#options.parking?.begin();
    try {
      seen = await new Promise((resolve, reject) => {
        let settled = false;
        let looking = false;
        let again = false;
        const finish = (error?: unknown) => {
          if (settled) return;
          settled = true;
          clearTimeout(deadline);
          clearInterval(poll);
          watcher?.close();
          options.signal.removeEventListener('abort', onAbort);
          if (error !== undefined) reject(error);
          else void look().then(resolve, reject);
        };
        const check = () => {
          if (settled) return;
          if (looking) {
            again = true;
            return;
          }
          looking = true;
          void look()
            .then((now) => {
              looking = false;
              if (now.running.length === 0) finish();
              else if (again) {
                again = false;
                check();
              }
            })
            .catch((error: unknown) => finish(error));
        };
        const onAbort = () => finish(options.signal.reason);
        options.signal.addEventListener('abort', onAbort, { once: true });
        const deadline = setTimeout(() => finish(), options.timeoutMs);
        // Watching wakes the parent at once; the poll covers file systems where watching misses a link.
        const poll = setInterval(check, this.#options.pollMs ?? 500);
        let watcher: ReturnType<typeof watch> | undefined;
        try {
          watcher = watch(directory, () => check());
          watcher.on('error', () => {});
        } catch {
          watcher = undefined;
        }
        check();
      });
    } finally {
      // Awaited: the worker removes the task's parked mark before the parent's code goes on (decision 0062).
      await this.#options.parking?.end();
    }
    return seen;
  }

  /** A failed result for a child whose task ended (or vanished) without leaving one; undefined while it runs. */
  async #reconcile(id: string): Promise<ChildResult | undefined> {
    const { root, parent, taskState } = this.#options;
    if (taskState === undefined) return undefined;
    const record = await readChildRecord(root, parent.taskId, id);
    const taskId = (await childOwner(root, parent.taskId, id)) ?? record?.task_id;
    if (record === undefined || taskId === undefined) return undefined;
    const where = await taskState(taskId);
    if (where === 'pending' || where === 'active') return undefined;
    // The task may have written its result just before it finished: look again before deciding it left none.
    const written = await readChildResult(root, parent.taskId, id);
    if (written !== undefined) return written;
    await deliverChildResult({
      root,
      record,
      result: {
        id,
        task_id: taskId,
        persona: record.persona,
        status: 'failed',
        reason:
          where === undefined
            ? `its task ${taskId} is gone from the queue`
            : `its task ${taskId} ended ${where} without a result`,
        steps: 0,
        finished_at: new Date().toISOString(),
      },
    });
    return readChildResult(root, parent.taskId, id);
  }

  async list(): Promise<ChildState[]> {
    const { root, parent } = this.#options;
    const states: ChildState[] = [];
    for (const id of await listIds(childrenDir(root, parent.taskId))) {
      const record = await readChildRecord(root, parent.taskId, id);
      if (record === undefined) continue;
      const result = await readChildResult(root, parent.taskId, id);
      let state: ChildState['state'] = 'finished';
      const owner = await childOwner(root, parent.taskId, id);
      if (owner !== undefined) record.task_id = owner;
      if (result === undefined) {
        if (record.task_id === undefined) state = 'starting';
        else {
          // A done or failed task always leaves a result first (the worker writes a failed one), so a task that is
          // gone or over without one was lost: its record stays for people to see.
          const where =
            this.#options.taskState === undefined ? 'pending' : await this.#options.taskState(record.task_id);
          state = where === 'pending' || where === 'active' ? where : 'lost';
        }
      }
      states.push({ record, state, delivered: false, ...(result === undefined ? {} : { result }) });
    }
    // In the order they were spawned (ids are hashes): list_agents reads as the parent worked, and wait_agents without
    // ids answers in the same order on every run, so the next prompt is the same.
    return states.sort(
      (a, b) =>
        a.record.created_at.localeCompare(b.record.created_at) ||
        (a.record.key ?? '').localeCompare(b.record.key ?? '', 'en', { numeric: true }) ||
        a.record.id.localeCompare(b.record.id),
    );
  }

  async message(id: string, text: string): Promise<void> {
    const record = await readChildRecord(this.#options.root, this.#options.parent.taskId, id);
    if (record === undefined) {
      throw new AssistantError('AGENT_UNKNOWN', `AGENT_UNKNOWN: ${id} is not a child of this agent`, {
        hint: 'list_agents names your children',
      });
    }
    const taskId = (await childOwner(this.#options.root, this.#options.parent.taskId, id)) ?? record.task_id;
    if (taskId === undefined) throw new AssistantError('CONFLICT', `${id} has not started yet`);
    if ((await this.result(id)) !== undefined) {
      throw new AssistantError('CONFLICT', `${id} has finished; its result waits for wait_agents`);
    }
    await this.#options.interject(taskId, text);
  }
}
