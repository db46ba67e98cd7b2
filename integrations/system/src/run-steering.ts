import type { HandlerContext } from '@assistant/sdk';

type AgentsContext = NonNullable<HandlerContext['agents']>;

/** What a workflow run answers to a request it cannot apply: it has no conversation of its own. */
const notForARun =
  'a workflow run takes pause, resume and stop; interject into or ask one of its agents (their task ids are in the run note)';

/**
 * The steering of a workflow's runner: `assistant steer <runner task> pause|resume|stop` (and REST, the dashboard)
 * reach the whole run. A pause holds the runner before its next spawn and pauses the agents running now; a resume
 * lets both go on; a stop ends the run `stopped` and stops its running agents, who hand it to theirs. Interject and
 * ask are refused with what to do instead.
 */
export function followRunSteering(agents: AgentsContext): {
  /** Aborted with the reason when a person stopped the run. */
  stopped: AbortSignal;
  /** Resolves while the run is not paused (or once it is stopped). */
  whilePaused(): Promise<void>;
  close(): Promise<void>;
} {
  const stop = new AbortController();
  let paused = false;
  let finished = false;
  let waiters: (() => void)[] = [];
  const release = () => {
    for (const wake of waiters) wake();
    waiters = [];
  };
  // A child that finished meanwhile refuses; the others are still steered (steerChildren goes on past a refusal).
  const toChildren = (action: 'pause' | 'resume' | 'stop', message?: string) =>
    void agents.steerChildren({ action, ...(message === undefined ? {} : { message }) }).catch(() => {});
  const following = agents.followSteering({
    pause: () => {
      paused = true;
      toChildren('pause');
    },
    resume: () => {
      paused = false;
      release();
      toChildren('resume');
    },
    stop: (reason) => {
      stop.abort(reason ?? 'stopped by the owner');
      paused = false;
      release();
      toChildren('stop', `the workflow run was stopped${reason ? `: ${reason}` : ''}`);
    },
    interject: () => {
      throw new Error(notForARun);
    },
    answerClarification: () => {
      throw new Error(notForARun);
    },
    ask: () => Promise.reject(new Error(notForARun)),
    done: () => finished,
  });
  return {
    stopped: stop.signal,
    whilePaused: () =>
      paused && !stop.signal.aborted ? new Promise<void>((resolve) => waiters.push(resolve)) : Promise.resolve(),
    close: async () => {
      finished = true;
      release();
      await following.close();
    },
  };
}
