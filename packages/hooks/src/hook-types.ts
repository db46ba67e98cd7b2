import type { Condition, ConditionNode, Provenance } from '@assistant/automations';
import type { EventRecord } from '@assistant/events';
import type { ReversibilityTier } from '@assistant/manifests';

/**
 * A hook, loaded and checked: from `hooks/<name>.yaml` beside config.yaml, or an entry of config.yaml's `hooks:`.
 * Shared by the compiler (packages/hooks), the runner in the worker and the surfaces (CLI, REST, dashboard).
 */
export interface CompiledHook {
  /** The file's name without `.yaml`, or the entry's `name:`; unique. */
  name: string;
  /** Where it was written, for messages: `hooks/accountant.yaml` or `config.yaml`, and the line of its start. */
  file: string;
  line: number;
  /** sha256 (first 16 hex) of the hook's canonical source: the slow path's cache and the firing records key on it. */
  version: string;
  description?: string;
  /** `enabled: false` in the file, or a one-shot hook that fired (see the runner's state). */
  enabled: boolean;
  /** The event type (`on:`), checked against the registry. */
  on: string;
  /** `on.filter` and `when:` compiled in the automations' condition language, over the event's declared fields. */
  conditions: Condition[];
  when: ConditionNode;
  /**
   * The event type's fields marked `trusted` when the hook was compiled. Every other value of the event's data is an
   * outsider's: fenced in prompts, and it makes a fast path over it non-deterministic for irreversible actions.
   * Absent (a hook built by hand), nothing is trusted.
   */
  trustedFields?: string[];
  /** `ask:` the slow path: an LLM question over the fenced event, typed verdict `{fire, reason}`. */
  ask?: { question: string; llm?: string };
  /** `count:` fire only when this many matching events (counting this one) came within the window. */
  count?: { atLeast: number; withinMs: number; per?: string };
  once: boolean;
  /** `debounce:` wait this long after the last matching event (per `per` key); one firing for a burst. */
  debounceMs?: number;
  /** `for:` the conditions must still hold this long after the event (re-checked at the due time). */
  forMs?: number;
  /** What a timer that came due while Assistant was down does: fire once, fire each, or skip (recorded). */
  catchUp: 'once' | 'all' | 'skip';
  /** Where the decision comes from, as for automations; `ask:` makes it `llm` or `hybrid`. */
  provenance: Provenance;
  actions: HookAction[];
  /** `approval: required`, or forced for an irreversible action whose provenance is not `rule` (unless `!yolo`). */
  approval: boolean;
}

/** One `then:` entry. Text fields may hold `{{event.data.x}}` templates, rendered when the hook fires. */
export type HookAction =
  | {
      kind: 'enqueue';
      type: string;
      payload?: Record<string, unknown>;
      delayMs?: number;
      tier: HookTier;
      yolo: boolean;
    }
  | {
      kind: 'service';
      /** In full: `domain.instance.service`. */
      name: string;
      inputs?: Record<string, unknown>;
      /** As automations' services: the human-log line and where the result goes (default: a note). */
      humanLog?: string;
      onResult?: Record<string, unknown>[];
      tier: HookTier;
      yolo: boolean;
    }
  | { kind: 'script'; name: string; inputs?: Record<string, unknown>; tier: HookTier; yolo: boolean }
  | { kind: 'agent'; prompt: string; llm?: string; tier: HookTier; yolo: boolean }
  | { kind: 'chat'; conversation?: string; text: string; tier: HookTier; yolo: boolean }
  | { kind: 'notify'; text: string; delayMs?: number; at?: string; tier: HookTier; yolo: boolean }
  | { kind: 'pause'; integration: string; reason?: string; tier: HookTier; yolo: boolean };

/** The manifests' reversibility tiers (`read_only`, `soft`, `hard`, `irreversible`). */
export type HookTier = ReversibilityTier;

/** One step of an explanation (dry run, dashboard): what was tested, with what value, and whether it held. */
export interface HookCheck {
  text: string;
  value?: unknown;
  passed: boolean;
}

/** What evaluating one hook against one event says; the runner acts on it, `hooks test` prints it. */
export interface HookDecision {
  hook: string;
  event: EventRecord['id'];
  /** The event type matched and the event has no `problem`. */
  matched: boolean;
  fastPath: { passed: boolean; checks: HookCheck[] };
  /** Where the decision comes from, checked again from the hook's conditions (never less strict than the hook's). */
  provenance?: Provenance;
  /** Present when the fast path passed and the hook has `ask:` (and the LLM was called or the cache answered). */
  slowPath?: { fire: boolean; reason: string; cached: boolean };
  fire: boolean;
  /** Why it does not fire, for people: `the fast path failed at …`, `the model said no: …`. */
  reason: string;
  /** The actions as they would run, templates rendered, with whether each waits for the owner's approval. */
  actions: { action: HookAction; needsApproval: boolean; summary: string }[];
}
