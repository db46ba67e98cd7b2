import { createHash } from 'node:crypto';
import type { ChildResult, ChildState, SpawnRequest, SubAgents } from '../../subagent-types.ts';

/** What a fake child answers: its text, or a whole result (a failure, say). */
export type FakeAnswer = string | Pick<ChildResult, 'status' | 'answer' | 'reason'>;

export interface FakeSubAgentsOptions {
  /** @default 'task-runner' */
  parentTaskId?: string;
  /** "Runs" a child: called once per child (per key), its answer becomes the child's result. */
  answer: (request: SpawnRequest, child: { id: string; taskId: string }) => FakeAnswer | Promise<FakeAnswer>;
}

/**
 * An in-memory SubAgents for unit tests of code that spawns children (the workflow runner): a spawn under a key used
 * before finds the child it made, each child "runs" by calling `answer` once, and its result is kept like an inbox
 * file, across any number of runners using the same fake (a runner that crashed and runs again).
 */
export class FakeSubAgents implements SubAgents {
  readonly parentTaskId: string;
  readonly depth = 0;
  /** Every spawn call, in order (including those that found an existing child). */
  readonly spawnCalls: SpawnRequest[] = [];
  /** The children made, by key. */
  readonly children = new Map<string, { id: string; taskId: string; request: SpawnRequest }>();
  readonly #results = new Map<string, ChildResult>();
  readonly #waiters = new Set<() => void>();
  readonly #answer: FakeSubAgentsOptions['answer'];
  readonly messages: { id: string; text: string }[] = [];

  constructor(options: FakeSubAgentsOptions) {
    this.parentTaskId = options.parentTaskId ?? 'task-runner';
    this.#answer = options.answer;
  }

  async spawn(request: SpawnRequest): Promise<{ id: string; taskId: string; existing: boolean }> {
    this.spawnCalls.push(request);
    const known = this.children.get(request.key);
    if (known) return { id: known.id, taskId: known.taskId, existing: true };
    const digest = createHash('sha256').update(`${this.parentTaskId}\n${request.key}`).digest('hex');
    const child = { id: `ag-${digest.slice(0, 16)}`, taskId: `task-${digest.slice(16, 28)}`, request };
    this.children.set(request.key, child);
    // The child runs on its own, as a queue task would: the spawn returns before it answers.
    void Promise.resolve()
      .then(() => this.#answer(request, child))
      .then(
        (answer) => this.#finish(child, typeof answer === 'string' ? { status: 'completed', answer } : answer),
        (error: unknown) => this.#finish(child, { status: 'failed', reason: String(error) }),
      );
    return { id: child.id, taskId: child.taskId, existing: false };
  }

  #finish(
    child: { id: string; taskId: string; request: SpawnRequest },
    outcome: Pick<ChildResult, 'status' | 'answer' | 'reason'>,
  ) {
    this.#results.set(child.id, {
      id: child.id,
      task_id: child.taskId,
      persona: child.request.persona,
      steps: 1,
      finished_at: new Date().toISOString(),
      ...outcome,
    });
    for (const wake of this.#waiters) wake();
  }

  async result(id: string): Promise<ChildResult | undefined> {
    return this.#results.get(id);
  }

  async wait(
    ids: readonly string[],
    options: { timeoutMs: number; signal: AbortSignal },
  ): Promise<{ results: ChildResult[]; running: string[] }> {
    const answer = () => ({
      results: ids.flatMap((id) => this.#results.get(id) ?? []),
      running: ids.filter((id) => !this.#results.has(id)),
    });
    if (answer().running.length === 0) return answer();
    await new Promise<void>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(check);
        options.signal.removeEventListener('abort', aborted);
      };
      const check = () => {
        if (answer().running.length > 0) return;
        done();
        resolve();
      };
      const aborted = () => {
        done();
        reject(options.signal.reason);
      };
      const timer = setTimeout(() => {
        done();
        resolve();
      }, options.timeoutMs);
      this.#waiters.add(check);
      options.signal.addEventListener('abort', aborted, { once: true });
    });
    return answer();
  }

  async list(): Promise<ChildState[]> {
    return [];
  }

  async message(id: string, text: string): Promise<void> {
    this.messages.push({ id, text });
  }
}
