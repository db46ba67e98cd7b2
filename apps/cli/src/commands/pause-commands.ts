import { AssistantError } from '@assistant/errors';
// The light entry: a pause command needs the registry's names, not every package the full index brings.
import { resolvePauseTarget } from '@assistant/integration-host/pause-targets';
import {
  BrokenNoteError,
  describePause,
  FileHumanLog,
  FileNoteStore,
  type PauseKind,
  PauseStore,
  pauseKinds,
  pauseNotePath,
} from '@assistant/notes';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';
import { writeJson } from '../open-cli-queue.ts';

export interface PauseCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
  kind: string;
  name: string;
  json?: boolean;
}

/** `instance`, `rule` or `schedule`, or a usage error saying so. */
function pauseKind(kind: string): PauseKind {
  if ((pauseKinds as readonly string[]).includes(kind)) return kind as PauseKind;
  throw new AssistantError('USAGE', `expected what to pause to be instance, rule or schedule, got \`${kind}\``, {
    hint: 'assistant pause instance NAME | assistant pause rule INSTANCE/PLATFORM/RULE | assistant pause schedule NAME',
  });
}

/**
 * `assistant pause instance|rule|schedule NAME [--reason TEXT]`: records the pause in `notes/system/paused.md`,
 * which the server's scheduler and the worker read before every run and every task: no restart, config.yaml as is.
 */
export async function pauseCommand(options: PauseCommandOptions & { reason?: string }): Promise<void> {
  const kind = pauseKind(options.kind);
  const { config, registry } = await loadCliConfig(options);
  const resolved = resolvePauseTarget({ registry, kind, name: options.name });
  if (!resolved.ok) throw new AssistantError('NOT_FOUND', resolved.problem, { hint: resolved.hint });
  const pauses = new PauseStore({ notes: new FileNoteStore({ root: config.paths.notes }) });
  const result = await brokenNote(() => pauses.pause({ kind, name: resolved.name, by: 'cli', reason: options.reason }));
  if (!result.already) {
    await new FileHumanLog({ directory: config.paths.logs }).write({
      source: 'cli',
      message: `paused ${kind} ${resolved.name}`,
      reason: describePause(result.entry),
    });
  }
  if (options.json) return writeJson(options.context, result);
  options.context.stdout.write(
    result.already
      ? `${kind} ${resolved.name} was already ${describePause(result.entry)}\n`
      : `${kind} ${resolved.name} ${describePause(result.entry)}\n${effectOf(kind)}\n`,
  );
}

/** `assistant resume instance|rule|schedule NAME`: removes its entry from the pause note. */
export async function resumeCommand(options: PauseCommandOptions): Promise<void> {
  const kind = pauseKind(options.kind);
  const { config, registry } = await loadCliConfig(options);
  // A name config.yaml no longer has can still be resumed: the note may outlive a rename.
  const resolved = resolvePauseTarget({ registry, kind, name: options.name });
  const name = resolved.ok ? resolved.name : options.name;
  const pauses = new PauseStore({ notes: new FileNoteStore({ root: config.paths.notes }) });
  const resumed = await brokenNote(() => pauses.resume({ kind, name }));
  if (!resumed) {
    throw new AssistantError('NOT_FOUND', `${kind} ${name} is not paused`, {
      hint: '`assistant paused` lists what is paused',
    });
  }
  await new FileHumanLog({ directory: config.paths.logs }).write({ source: 'cli', message: `resumed ${kind} ${name}` });
  if (options.json) return writeJson(options.context, { resumed });
  options.context.stdout.write(`resumed ${kind} ${name} (it was ${describePause(resumed)})\n`);
}

/** `assistant paused`: every paused instance, rule and schedule, with who, when and why. */
export async function pausedCommand(options: Omit<PauseCommandOptions, 'kind' | 'name'>): Promise<void> {
  const { config, registry } = await loadCliConfig(options);
  const state = await new PauseStore({ notes: new FileNoteStore({ root: config.paths.notes }) }).read();
  if (options.json) return writeJson(options.context, state);
  if (state.broken) options.context.stderr.write(`warning: notes/${state.broken}: nothing is known to be paused\n`);
  for (const problem of state.problems) options.context.stderr.write(`warning: notes/${problem}\n`);
  if (state.entries.length === 0) {
    options.context.stdout.write('nothing is paused\n');
    return;
  }
  for (const entry of state.entries) {
    // An entry the config no longer has (a renamed rule, a removed instance) pauses nothing: say so.
    const known = resolvePauseTarget({ registry, kind: entry.kind, name: entry.name });
    const stale = known.ok ? '' : ' (config.yaml has no such thing: it pauses nothing)';
    options.context.stdout.write(`${entry.kind.padEnd(8)}  ${entry.name}  ${describePause(entry)}${stale}\n`);
  }
  options.context.stdout.write(`(kept in notes/${pauseNotePath}; \`assistant resume KIND NAME\` resumes one)\n`);
}

function effectOf(kind: PauseKind): string {
  if (kind === 'instance')
    return 'its schedule does not fire, and its tasks wait in pending/ until `assistant resume instance` (running ones finish)';
  if (kind === 'rule') return 'it is applied to no item until `assistant resume rule`';
  return 'it does not fire until `assistant resume schedule`; tasks enqueued otherwise still run';
}

/** A pause note that does not parse is the owner's to fix: never overwritten, named with its line. */
async function brokenNote<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof BrokenNoteError) {
      throw new AssistantError('CONFLICT', `notes/${error.message}`, {
        hint: 'the pause note does not parse; fix it by hand (or delete it to resume everything), then try again',
      });
    }
    throw error;
  }
}
