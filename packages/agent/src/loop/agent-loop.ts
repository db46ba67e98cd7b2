import { randomUUID } from 'node:crypto';
import {
  type ChatMessage,
  type ChatResponse,
  fencedToolResultsInstruction,
  LlmResponseMalformedError,
  type TokenUsage,
  type ToolCall,
} from '@assistant/llm';
import { buildAskRequest, type TranscriptSnapshot } from '../ask/build-ask-request.ts';
import { compressMessages } from '../compression/compress-messages.ts';
import { AsyncQueue } from '../internal/async-queue.ts';
import { describeError } from '../internal/describe-error.ts';
import { PauseGate } from '../internal/pause-gate.ts';
import type { Clarification, HandleStatus, Notification, SteerableHandle } from '../steering/steerable-handle.ts';
import { steeringMessages } from '../steering/steering-messages.ts';
import type { Tool, ToolContext } from '../tools/define-tool.ts';
import { askToolGate, runToolCalls } from '../tools/run-tool-calls.ts';
import { succeededToolNames } from '../tools/succeeded-tool-names.ts';
import { bothGates, type ToolGate, type ToolGateDecision } from '../tools/tool-gate.ts';
import { visibleTools } from '../tools/visible-tools.ts';
import type { AgentEvent, AgentEventPayload, PausePoint, SteeringAction } from './agent-event.ts';
import type { AgentOptions, AgentResult, AgentResultStatus } from './agent-options.ts';
import { type ResolvedAgentOptions, resolveAgentOptions } from './resolve-agent-options.ts';

/** A user message waiting for the next model call. Interjections keep a loop going; steering notes do not. */
interface PendingMessage {
  kind: 'interjection' | 'steering';
  content: string;
}

interface Outcome {
  status: AgentResultStatus;
  answer?: string;
  reason?: string;
  error?: unknown;
}

/**
 * One running tool loop and the handle that steers it. Loops nest: a tool's `context.startAgent` makes a child
 * whose parent is this loop, and steering walks down the tree of running children while clarifications,
 * notifications and events walk up to the top.
 */
/** Answers in a row that broke their provider's format before the run gives up with that error. */
const maxMalformedInARow = 2;

export class AgentLoop implements SteerableHandle {
  readonly id: string = randomUUID();
  readonly label: string;
  readonly lineage: readonly string[];

  readonly #options: ResolvedAgentOptions;
  readonly #parent: AgentLoop | undefined;
  readonly #root: AgentLoop;
  readonly #children: AgentLoop[] = [];
  readonly #gate = new PauseGate();
  /** Asked before every tool call: this loop's own and its parent's (see bothGates), so a nested loop cannot skip it. */
  readonly #toolGate: ToolGate | undefined;
  readonly #controller = new AbortController();
  readonly #context: ToolContext;
  readonly #result: Promise<AgentResult>;
  #halted: { status: 'stopped' | 'timeout'; reason: string } | undefined;
  #finished = false;
  #messages: ChatMessage[] = [];
  #pending: PendingMessage[] = [];
  #steps = 0;
  #usage: TokenUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };
  #succeeded = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #removeSignalListener: () => void = () => {};

  // Only the top loop's copies are used: every loop of a tree asks and notifies through its root.
  readonly #clarifications = new AsyncQueue<Clarification>();
  readonly #notifications = new AsyncQueue<Notification>();
  readonly #awaitingAnswers = new Map<string, (answer: string) => void>();

  constructor(options: AgentOptions) {
    this.#options = resolveAgentOptions(options);
    const parent = options.parent;
    if (parent !== undefined && !(parent instanceof AgentLoop)) {
      throw new TypeError('Expected `parent` to be a handle made by startAgent or ToolContext.startAgent');
    }
    this.#parent = parent;
    this.#root = parent === undefined ? this : parent.#root;
    this.#toolGate = bothGates(parent === undefined ? undefined : parent.#toolGate, this.#options.gate);
    this.label = this.#options.label;
    this.lineage = [...(parent?.lineage ?? []), this.label];
    this.#context = {
      signal: this.#controller.signal,
      handle: this,
      startAgent: (childOptions) => new AgentLoop({ ...childOptions, parent: this }),
      askCaller: (question) => this.#askCaller(question),
      notify: (message) => this.#notify(message),
      waitWhilePaused: () => this.#waitWhilePaused('tool-step'),
      gate: (request) => this.#askGate(request),
    };

    if (parent !== undefined) {
      parent.#children.push(this);
      // A child started by a tool that was already running when the owner paused or stopped joins that state.
      if (parent.#gate.paused) this.pause();
      if (parent.#halted !== undefined) this.stop(parent.#halted.reason);
    }
    const timeoutMs = this.#options.timeoutMs;
    if (timeoutMs !== undefined) {
      this.#timer = setTimeout(() => this.#halt('timeout', `timed out after ${timeoutMs} ms`), timeoutMs);
    }
    const external = this.#options.signal;
    if (external !== undefined) {
      const onAbort = (): void => this.#halt('stopped', `aborted: ${describeError(external.reason)}`);
      if (external.aborted) onAbort();
      else {
        external.addEventListener('abort', onAbort, { once: true });
        this.#removeSignalListener = () => external.removeEventListener('abort', onAbort);
      }
    }
    this.#result = this.#run();
  }

  pause(): void {
    if (this.#finished) return;
    if (this.#halted === undefined && !this.#gate.paused) {
      this.#gate.pause();
      this.#steer('pause', 'steering', steeringMessages.paused);
    }
    for (const child of this.#runningChildren()) child.pause();
  }

  resume(): void {
    if (this.#finished) return;
    if (this.#halted === undefined && this.#gate.paused) {
      this.#gate.resume();
      this.#steer('resume', 'steering', steeringMessages.resumed);
    }
    for (const child of this.#runningChildren()) child.resume();
  }

  interject(message: string): void {
    if (this.#finished) return;
    this.#steer('interject', 'interjection', steeringMessages.interjection(message));
    for (const child of this.#runningChildren()) child.interject(message);
  }

  stop(reason = 'stopped by the owner'): void {
    this.#halt('stopped', reason);
  }

  async ask(question: string): Promise<string> {
    const snapshots: TranscriptSnapshot[] = [this, ...this.#runningDescendants()].map((loop) => ({
      lineage: loop.lineage,
      messages: [...loop.#messages],
    }));
    const signal = this.#options.signal;
    const response = await this.#options.model.chat(
      buildAskRequest(question, snapshots),
      signal === undefined ? {} : { signal },
    );
    return response.message.content ?? '';
  }

  result(): Promise<AgentResult> {
    return this.#result;
  }

  done(): boolean {
    return this.#finished;
  }

  status(): HandleStatus {
    if (this.#finished) return 'finished';
    if (this.#halted !== undefined) return 'stopping';
    return this.#gate.paused ? 'paused' : 'running';
  }

  async nextClarification(): Promise<Clarification> {
    const root = this.#root;
    for (;;) {
      const clarification = await root.#clarifications.next();
      // Skip questions whose tool was stopped while the question waited in the queue.
      if (root.#awaitingAnswers.has(clarification.id)) return clarification;
    }
  }

  answerClarification(id: string, answer: string): void {
    const root = this.#root;
    const resolve = root.#awaitingAnswers.get(id);
    if (resolve === undefined) return;
    root.#awaitingAnswers.delete(id);
    resolve(answer);
  }

  nextNotification(): Promise<Notification> {
    return this.#root.#notifications.next();
  }

  children(): SteerableHandle[] {
    return [...this.#children];
  }

  transcript(): ChatMessage[] {
    return structuredClone(this.#messages);
  }

  /** Runs the loop to its outcome and turns every way of ending into a result; never rejects. */
  async #run(): Promise<AgentResult> {
    // Let the constructor return first, so the caller holds the handle before the first event or model call.
    await Promise.resolve();
    let outcome: Outcome;
    try {
      outcome = await this.#loop();
    } catch (error) {
      // After a stop or timeout the error is only the abort surfacing from the model call or the pause gate.
      outcome = this.#halted ?? { status: 'failed', reason: describeError(error), error };
    }
    // Steering notes (the stop request) and late interjections go into the saved transcript, so none is lost.
    this.#drainPending();
    try {
      await this.#options.transcript?.save([...this.#messages], { steps: this.#steps, status: outcome.status });
    } catch (error) {
      outcome = { status: 'failed', reason: `saving the transcript failed: ${describeError(error)}`, error };
    }
    clearTimeout(this.#timer);
    this.#removeSignalListener();
    this.#finished = true;
    const result: AgentResult = {
      status: outcome.status,
      ...(outcome.answer === undefined ? {} : { answer: outcome.answer }),
      ...(outcome.reason === undefined ? {} : { reason: outcome.reason }),
      steps: this.#steps,
      usage: { ...this.#usage },
    };
    this.#emit({ type: 'done', result });
    return outcome.error === undefined ? result : { ...result, error: outcome.error };
  }

  async #loop(): Promise<Outcome> {
    const options = this.#options;
    const signal = this.#controller.signal;
    const saved = await options.transcript?.load();
    signal.throwIfAborted();
    if (saved !== undefined && saved.length > 0) {
      this.#messages = [...saved];
      this.#succeeded = succeededToolNames(saved);
      await this.#resumeUnansweredCalls();
    } else {
      // Tool results reach the model fenced (runToolCalls); the model is told once what the fences mean.
      const fencing = options.tools.some((tool) => !tool.trusted);
      const system = fencing ? `${options.system}\n\n${fencedToolResultsInstruction}` : options.system;
      this.#messages = [{ role: 'system', content: system }, ...options.input];
    }

    let malformedInARow = 0;
    for (;;) {
      await this.#waitWhilePaused('model-call');
      this.#drainPending();
      // Limits are checked before a model call rather than after, so the last step's tool calls still run and
      // every call in the saved transcript has its result: a resumed run can continue from it.
      if (this.#steps >= options.maxSteps) {
        return { status: 'max_steps', reason: `reached the limit of ${options.maxSteps} model calls` };
      }
      if (options.budgetTokens !== undefined && this.#usage.totalTokens >= options.budgetTokens) {
        return {
          status: 'budget',
          reason: `used ${this.#usage.totalTokens} tokens of a budget of ${options.budgetTokens}`,
        };
      }
      if (await this.#compressIfNeeded(signal)) {
        // The summary call took time: honour a pause or interjection that came meanwhile before the next call.
        await this.#waitWhilePaused('model-call');
        this.#drainPending();
      }

      this.#steps += 1;
      const step = this.#steps;
      this.#emit({ type: 'step-started', step });
      const offered = visibleTools(options.tools, this.#succeeded);
      let response: ChatResponse;
      try {
        response = await options.model.chat(
          {
            messages: [...this.#messages],
            ...(offered.length > 0 ? { tools: offered.map((tool) => tool.spec) } : {}),
          },
          {
            signal,
            onDelta: (delta) =>
              this.#emit({
                type: 'token',
                step,
                text: delta.text,
                ...(delta.restart === true ? { restart: true } : {}),
              }),
          },
        );
      } catch (error) {
        // An answer that broke its provider's format (tool-call arguments that are not JSON) is the model's mistake,
        // like arguments that fail their schema: it is shown what went wrong and answers again, a few times in a row
        // at most. The step counts against `maxSteps`.
        if (!(error instanceof LlmResponseMalformedError) || malformedInARow >= maxMalformedInARow) throw error;
        signal.throwIfAborted();
        malformedInARow += 1;
        this.#emit({ type: 'step-finished', step, toolCalls: 0, usage: undefined });
        this.#messages.push({
          role: 'user',
          content: `Your last answer could not be read: ${error.message} (it began: ${error.excerpt.slice(0, 200)}). Answer again; the arguments of a tool call must be one JSON object.`,
        });
        continue;
      }
      malformedInARow = 0;
      signal.throwIfAborted();
      this.#addUsage(response.usage);
      const { content } = response.message;
      const toolCalls = withUniqueIds(response.message.toolCalls, this.#messages);
      this.#messages.push(
        toolCalls.length > 0 ? { role: 'assistant', content, toolCalls } : { role: 'assistant', content },
      );

      if (toolCalls.length === 0) {
        this.#emit({ type: 'step-finished', step, toolCalls: 0, usage: response.usage });
        // An interjection that came during the final call would otherwise never reach the model.
        if (!this.#pending.some((message) => message.kind === 'interjection')) {
          return { status: 'completed', answer: content ?? '' };
        }
        await this.#save();
        continue;
      }

      // The model's decision is saved before any of it runs: a worker that dies while the calls run resumes them,
      // with the same call ids (so an approval asked for is found again, and a cell's call log is its own), instead
      // of asking the model again for calls it may write differently.
      await this.#save();
      await this.#runCalls(step, toolCalls, offered);
      this.#emit({ type: 'step-finished', step, toolCalls: toolCalls.length, usage: response.usage });
      await this.#save();
      signal.throwIfAborted();
    }
  }

  /**
   * Runs the calls of the saved transcript's last step that have no result yet: a worker died while they ran. They
   * run again with their ids, through the gate as before; a tool that must not run twice keys on the id.
   */
  async #resumeUnansweredCalls(): Promise<void> {
    const last = this.#messages.findLastIndex((message) => message.role === 'assistant');
    const message = this.#messages[last];
    if (message?.role !== 'assistant' || message.toolCalls === undefined) return;
    const answered = new Set(
      this.#messages.slice(last + 1).flatMap((later) => (later.role === 'tool' ? [later.toolCallId] : [])),
    );
    const unanswered = message.toolCalls.filter((call) => !answered.has(call.id));
    if (unanswered.length === 0) return;
    // The calls were offered when the model made them; a tool this loop no longer has is answered with an error.
    await this.#runCalls(this.#steps, unanswered, this.#options.tools);
    await this.#save();
    this.#controller.signal.throwIfAborted();
  }

  async #runCalls(step: number, toolCalls: readonly ToolCall[], offered: readonly Tool[]): Promise<void> {
    const options = this.#options;
    const signal = this.#controller.signal;
    const outcomes = await runToolCalls({
      calls: toolCalls,
      tools: options.toolsByName,
      offered,
      concurrency: options.toolConcurrency,
      waitUntilStartAllowed: () => this.#waitWhilePaused('tool-call'),
      signal,
      context: this.#context,
      gate: this.#toolGate,
      onApprovalWait: (call, approval) =>
        this.#emit({ type: 'approval-wait', step, toolCallId: call.id, toolName: call.name, approval }),
      onApprovalDecided: (call, approval, decision) =>
        this.#emit({
          type: 'approval-decided',
          step,
          toolCallId: call.id,
          toolName: call.name,
          approval,
          run: decision.run,
          ...(decision.run ? {} : { reason: decision.reason }),
        }),
      onStarted: (call) => this.#emit({ type: 'tool-started', step, toolCallId: call.id, toolName: call.name }),
      onFinished: (outcome) =>
        this.#emit({
          type: 'tool-finished',
          step,
          toolCallId: outcome.call.id,
          toolName: outcome.call.name,
          succeeded: outcome.succeeded,
        }),
    });
    for (const outcome of outcomes) {
      this.#messages.push({ role: 'tool', toolCallId: outcome.call.id, content: outcome.content });
      if (outcome.succeeded) this.#succeeded.add(outcome.call.name);
    }
  }

  /** A call a tool makes for the model (a code cell's): the loop's gate, once the loop is not paused. */
  async #askGate(request: Parameters<ToolContext['gate']>[0]): Promise<ToolGateDecision> {
    const gate = this.#toolGate;
    if (gate === undefined) return { run: true };
    await this.#waitWhilePaused('tool-call');
    const { tool, input, callId, onWait } = request;
    const step = this.#steps;
    return askToolGate(gate, {
      tool,
      input,
      call: { id: callId, name: tool.name, arguments: JSON.stringify(input) ?? 'null' },
      signal: this.#controller.signal,
      handle: this,
      onWait: (approval) => {
        this.#emit({ type: 'approval-wait', step, toolCallId: callId, toolName: tool.name, approval });
        onWait?.(approval);
      },
      onDecided: (approval, decision) =>
        this.#emit({
          type: 'approval-decided',
          step,
          toolCallId: callId,
          toolName: tool.name,
          approval,
          run: decision.run,
          ...(decision.run ? {} : { reason: decision.reason }),
        }),
    });
  }

  /** Summarises older turns when the transcript nears the context window; true when it did. */
  async #compressIfNeeded(signal: AbortSignal): Promise<boolean> {
    const options = this.#options;
    const estimatedTokensBefore = options.estimateTokens(this.#messages);
    if (estimatedTokensBefore <= options.model.contextWindow * options.thresholdRatio) return false;
    const compressed = await compressMessages({
      messages: this.#messages,
      model: options.model,
      keepRecent: options.keepRecent,
      signal,
    });
    if (compressed === undefined) return false;
    this.#addUsage(compressed.usage);
    // Archive before replacing, so the originals are kept even if the loop stops right after.
    await options.transcript?.archive?.(compressed.archived);
    this.#messages = compressed.messages;
    this.#emit({
      type: 'compression',
      archivedMessages: compressed.archived.length,
      estimatedTokensBefore,
      estimatedTokensAfter: options.estimateTokens(this.#messages),
    });
    return true;
  }

  async #waitWhilePaused(before: PausePoint): Promise<void> {
    if (this.#gate.paused) this.#emit({ type: 'waiting-while-paused', before });
    await this.#gate.wait(this.#controller.signal);
  }

  #halt(status: 'stopped' | 'timeout', reason: string): void {
    if (this.#finished || this.#halted !== undefined) return;
    this.#halted = { status, reason };
    if (status === 'stopped') this.#steer('stop', 'steering', steeringMessages.stopRequested(reason));
    this.#controller.abort(new DOMException(reason, 'AbortError'));
    for (const child of this.#runningChildren()) child.stop(reason);
  }

  #steer(action: SteeringAction, kind: PendingMessage['kind'], content: string): void {
    this.#pending.push({ kind, content });
    this.#emit({ type: 'steering-applied', action, message: content });
  }

  #drainPending(): void {
    for (const message of this.#pending) this.#messages.push({ role: 'user', content: message.content });
    this.#pending = [];
  }

  async #save(): Promise<void> {
    await this.#options.transcript?.save([...this.#messages], { steps: this.#steps, status: 'running' });
  }

  #addUsage(usage: TokenUsage | undefined): void {
    if (usage === undefined) return;
    this.#usage.promptTokens += usage.promptTokens;
    this.#usage.completionTokens += usage.completionTokens;
    this.#usage.totalTokens += usage.totalTokens;
  }

  #askCaller(question: string): Promise<string> {
    const signal = this.#controller.signal;
    if (signal.aborted) return Promise.reject(signal.reason);
    const root = this.#root;
    const id = randomUUID();
    const ownerWait = root.#options.ownerWait;
    return new Promise<string>((resolve, reject) => {
      let waiting = true;
      const stopWaiting = async (): Promise<void> => {
        if (!waiting) return;
        waiting = false;
        // A failure here is the caller's to report (a worker logs a parked mark it cannot remove): the answer goes on.
        await Promise.resolve(ownerWait?.end()).catch(() => {});
      };
      const onAbort = (): void => {
        root.#awaitingAnswers.delete(id);
        void stopWaiting();
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      ownerWait?.begin();
      root.#awaitingAnswers.set(id, (answer) => {
        signal.removeEventListener('abort', onAbort);
        // The answer reaches the tool only once the wait has ended (the task is no longer marked as waiting).
        void stopWaiting().then(() => resolve(answer));
      });
      this.#emit({ type: 'clarification', id, question });
      root.#clarifications.push({ id, question, lineage: this.lineage });
    });
  }

  #notify(message: string): void {
    this.#emit({ type: 'notification', message });
    this.#root.#notifications.push({ message, lineage: this.lineage, at: new Date() });
  }

  #runningChildren(): AgentLoop[] {
    return this.#children.filter((child) => !child.#finished);
  }

  #runningDescendants(): AgentLoop[] {
    return this.#runningChildren().flatMap((child) => [child, ...child.#runningDescendants()]);
  }

  /** Delivers an event to this loop's listener and every ancestor's, so the top sees the whole tree. */
  #emit(payload: AgentEventPayload): void {
    const event: AgentEvent = { ...payload, lineage: this.lineage, handleId: this.id };
    for (let loop: AgentLoop | undefined = this; loop !== undefined; loop = loop.#parent) {
      try {
        loop.#options.onEvent?.(event);
      } catch {
        // A listener is an observer: its failure must not break the loop it watches.
      }
    }
  }
}

/**
 * The calls of a reply, each with an id no earlier call of the transcript has: servers that leave ids empty or number
 * them per reply (`call_0` every time) would otherwise give two calls one id, and ids key what must not happen twice
 * (an approval, a cell's call log). A provider's own unique id is kept as it is.
 */
function withUniqueIds(calls: readonly ToolCall[], earlier: readonly ChatMessage[]): ToolCall[] {
  const seen = new Set<string>();
  for (const message of earlier) {
    if (message.role === 'assistant') for (const call of message.toolCalls ?? []) seen.add(call.id);
  }
  return calls.map((call) => {
    if (call.id !== '' && !seen.has(call.id)) {
      seen.add(call.id);
      return call;
    }
    let id: string;
    do id = `call_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
    while (seen.has(id));
    seen.add(id);
    return { ...call, id };
  });
}
