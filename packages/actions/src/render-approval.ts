import { createHash } from 'node:crypto';

/**
 * One action as the owner is shown it and as its run is checked against: what it is (name, kind, tier), what it is
 * done to, and everything it runs with. Built from an approval request when it is made, and again from the task that
 * would run it; the two renderings must be the same text, or the task is refused.
 */
export interface ShownAction {
  kind: 'platform' | 'script' | 'service';
  /** The platform action (`send_reply`), the script, or the service call `domain.instance.service`. */
  name: string;
  tier: string;
  target?: { field: string; value?: string | undefined } | undefined;
  argument?: unknown;
  /** A script's or a service's inputs as they will run: templates already filled from the item. */
  inputs?: Record<string, string | number | boolean> | undefined;
  /** Why the inputs could not be filled (a broken template): shown instead, and nothing can match it. */
  inputsProblem?: string | undefined;
  /** A service's `on_result` routes and human-log line: where its result goes. */
  routes?: unknown;
  humanLog?: string | undefined;
  /** The full text the action sends or posts. */
  text?: string | undefined;
}

/** A tool call as the owner is shown it: the tool, its tier and the arguments exactly as the model wrote them. */
export interface ShownToolCall {
  tool: string;
  tier: string;
  /** The loop that asks (`system.agent › research`) and its task. */
  loop: string;
  task: string;
  /** The arguments as the loop will pass them to the tool. */
  input: unknown;
}

/** The canonical rendering of an approval and its digests. */
export interface ApprovalRendering {
  /** What will happen, as text: the same for the same approval, on every surface. */
  rendering: string;
  /** `sha256:` and the hex SHA-256 of `rendering`. */
  digest: string;
  /** For an approval of actions: the digest of each action's part of the rendering, in the order of its actions. */
  actionDigests: string[];
}

/** `sha256:` and the hex SHA-256 of the text (UTF-8). */
export function digestOf(text: string): string {
  return `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;
}

/**
 * A value as one line of JSON with object keys sorted, so the same value always reads (and hashes) the same however
 * its keys were ordered.
 */
function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? 'undefined';
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}

/**
 * A text that may span lines, after a label: its length first, then the text itself on the following lines. The
 * length makes the rendering unambiguous: a text that contains `input to = "…"` or a second `action:` cannot pass
 * for another field, so two different sets of inputs never render (and hash) the same.
 */
function block(label: string, text: string): string {
  return `${label} (${text.length} characters):\n${text}`;
}

/** A string input on one line as JSON (`"Bills"`), or as a block when it spans lines (a message body). */
function shownValue(name: string, value: string | number | boolean): string {
  if (typeof value === 'string' && value.includes('\n')) return block(`input ${name}`, value);
  return `input ${name} = ${JSON.stringify(value)}`;
}

/** One action's part of the rendering. Its digest is what the task that runs the action is checked against. */
export function renderAction(action: ShownAction): string {
  const lines = [`action: ${action.name}`, `kind: ${action.kind}`, `tier: ${action.tier.replace('_', ' ')}`];
  if (action.target) {
    lines.push(
      `target: ${action.target.field} = ${action.target.value === undefined ? '(the item has none)' : JSON.stringify(action.target.value)}`,
    );
  }
  if (action.argument !== undefined) lines.push(`argument: ${canonicalJson(action.argument)}`);
  if (action.inputsProblem !== undefined) {
    lines.push(`inputs: cannot be filled from the item (${action.inputsProblem})`);
  } else if (action.kind !== 'platform') {
    const names = Object.keys(action.inputs ?? {}).sort();
    if (names.length === 0) lines.push('inputs: none');
    for (const name of names) lines.push(shownValue(name, action.inputs?.[name] ?? ''));
  }
  if (action.routes !== undefined) lines.push(`result goes to: ${canonicalJson(action.routes)}`);
  if (action.humanLog !== undefined) lines.push(`human log line: ${JSON.stringify(action.humanLog)}`);
  if (action.text !== undefined) lines.push(block('text', action.text));
  return lines.join('\n');
}

/** The rendering of an approval of actions on one item. */
export function renderActions(parts: {
  instance: string;
  platform: string;
  item: string;
  title: string;
  actions: readonly ShownAction[];
}): ApprovalRendering {
  const blocks = parts.actions.map((action) => renderAction(action));
  const rendering = [
    `on: ${parts.instance}/${parts.platform}`,
    `item: ${parts.item}`,
    `title: ${JSON.stringify(parts.title)}`,
    `${blocks.length} action${blocks.length === 1 ? '' : 's'}:`,
    ...blocks.map((text) => `\n${text}`),
  ].join('\n');
  return { rendering, digest: digestOf(rendering), actionDigests: blocks.map((text) => digestOf(text)) };
}

/** The rendering of a tool call an agent loop waits to make: the arguments in full, as indented JSON. */
export function renderToolCall(call: ShownToolCall): ApprovalRendering {
  const json = JSON.stringify(call.input ?? null, null, 2) ?? 'null';
  const rendering = [
    `tool call: ${call.tool}`,
    `tier: ${call.tier.replace('_', ' ')}`,
    `by: agent loop ${call.loop} of task ${call.task}`,
    block('arguments', json),
  ].join('\n');
  return { rendering, digest: digestOf(rendering), actionDigests: [] };
}

/** What every surface says after a rendering it cannot show in full: how much is left, and where to read it. */
export function moreCharacters(count: number): string {
  return `${count} more characters: open the request`;
}

/** Where to open a request in full: the CLI command and the dashboard page. */
export function whereToOpen(id: string): string {
  return `\`assistant approvals show ${id}\` or /approvals/${id} on the dashboard`;
}

/**
 * A rendering for a surface that holds at most `maxChars` characters (a Telegram message): all of it when it fits,
 * else its beginning and then, plainly, `N more characters: open the request` and where to open it. Nothing is cut
 * without saying so. Counted in code points, as Telegram counts.
 */
export function fitRendering(options: { rendering: string; maxChars: number; id: string }): string {
  const characters = Array.from(options.rendering);
  if (characters.length <= options.maxChars) return options.rendering;
  const open = whereToOpen(options.id);
  // The note's own length depends on the count it names; reserve room for the largest count it can name.
  const reserved = `\n…\n${moreCharacters(characters.length)} (${open})`.length;
  const kept = Math.max(0, options.maxChars - reserved);
  return `${characters.slice(0, kept).join('')}\n…\n${moreCharacters(characters.length - kept)} (${open})`;
}
