/**
 * A workflow, as read from `agents/<name>.yaml` beside config.yaml (docs/agents.md, "Topologies and workflows"): which
 * personas work together, in which topology, on what. Task texts are templates: `{{input}}` is what the run was
 * given, `{{previous}}` (pipeline steps only) the previous step's answer.
 */
export type Workflow = PipelineWorkflow | StarWorkflow | MeshWorkflow;

export const topologies = ['pipeline', 'star', 'mesh'] as const;
export type Topology = (typeof topologies)[number];

interface WorkflowBase {
  /** The file's name without `.yaml`. */
  name: string;
  /** `agents/<name>.yaml`, relative to the folder of config.yaml. */
  file: string;
  description?: string;
}

/** Each step's answer is the next step's `{{previous}}`; the last step's answer is the run's output. */
export interface PipelineWorkflow extends WorkflowBase {
  topology: 'pipeline';
  steps: PipelineStep[];
}

export type PipelineStep =
  /** A persona given a task. @default task `{{previous}}` (`{{input}}` for the first step) */
  | { kind: 'agent'; persona: string; task: string }
  /** Another workflow run as this step, given the previous answer as its input; its output is this step's answer. */
  | { kind: 'workflow'; workflow: string };

/** A supervisor given the task, which may spawn the workers; its answer is the run's output. */
export interface StarWorkflow extends WorkflowBase {
  topology: 'star';
  supervisor: string;
  workers: string[];
  task: string;
}

/** The agents take turns on the blackboard, each seeing it so far, until an entry contains `stopWhen` or the rounds end. */
export interface MeshWorkflow extends WorkflowBase {
  topology: 'mesh';
  agents: string[];
  task: string;
  /** @default 3 (at most 20) */
  maxRounds: number;
  /** Text whose appearance in an entry ends the mesh. @default none: every round runs */
  stopWhen?: string;
}

/** One thing wrong with a workflow manifest, where the owner finds it. */
export interface WorkflowProblem {
  /** `agents/review.yaml`, relative to the folder of config.yaml. */
  file: string;
  /** Counts from 1; absent only when the whole file is the problem (it cannot be read). */
  line?: number;
  col?: number;
  /** The key path inside the file: `steps[1].persona`, `(document)`. */
  key: string;
  path: readonly (string | number)[];
  message: string;
  hint?: string;
  /** The workflow it is about. */
  workflow: string;
}

/** `system.workflow`'s payload. */
export interface WorkflowTaskPayload {
  workflow: string;
  input: string;
  /** The run id, made by whoever enqueues (`run-<date>-<random>`); absent: derived from the task id. */
  run?: string;
  /**
   * A conversation that gets the run's answer (its output, or why it failed) as a message when the run ends: set when a
   * chat started the run (the `run_workflow` chat tool). @default none: the answer is only in the run note
   */
  reply_to?: WorkflowReplyTo;
}

/**
 * Where a run's answer is posted (`chat.notify`): a conversation of a chat instance. A type, not an interface, so a
 * payload holding it is still JSON to the queue.
 */
export type WorkflowReplyTo = {
  conversation: string;
  /** The chat instance the conversation belongs to. @default 'chat' (the builtin chat's default instance) */
  instance?: string;
};

/** What `system.workflow` returns (its task's result). */
export interface WorkflowRunResult {
  run: string;
  /** `stopped`: a person stopped the run (`assistant steer <runner task> stop`). */
  status: 'done' | 'failed' | 'stopped';
  output: string;
  /** Why a failed run failed, or why it was stopped. */
  reason?: string;
}
