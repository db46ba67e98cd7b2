import { renderTemplate } from '@assistant/actions';
import type { EventRecord } from '@assistant/events';
import { fenceUntrusted } from '@assistant/llm';
import type { CompiledHook, HookAction } from './hook-types.ts';

/** What templates see: `{{event.data.subject}}`, `{{event.type}}`, `{{event.at}}`, `{{hook.name}}`. */
export function templateData(hook: Pick<CompiledHook, 'name'>, event: EventRecord): Record<string, unknown> {
  return {
    event: {
      id: event.id,
      type: event.type,
      at: event.at,
      source: event.source,
      native_id: event.native_id,
      caused_by: event.caused_by ?? [],
      data: event.data,
    },
    hook: { name: hook.name },
  };
}

/**
 * An action with its templates rendered for one event, as it will run. Texts for people (notify, chat) and inputs
 * (enqueue payloads, service and script inputs) are rendered as automations render theirs; an agent's prompt goes
 * to an LLM, so every value an outsider wrote (each field of the event not marked trusted) stands in the prompt as a
 * reference and follows it fenced (`fenceUntrusted`), never as instructions. Throws when a template does not render.
 */
export function renderHookAction(options: {
  hook: Pick<CompiledHook, 'name' | 'trustedFields'>;
  event: EventRecord;
  action: HookAction;
}): HookAction {
  const { hook, event, action } = options;
  const data = templateData(hook, event);
  const render = (text: string) => renderTemplate(text, data);
  switch (action.kind) {
    case 'enqueue':
      return action.payload === undefined
        ? action
        : { ...action, payload: renderDeep(action.payload, render) as Record<string, unknown> };
    case 'service':
    case 'script':
      return action.inputs === undefined
        ? action
        : { ...action, inputs: renderDeep(action.inputs, render) as Record<string, unknown> };
    case 'agent':
      return { ...action, prompt: renderFencedPrompt({ hook, event, prompt: action.prompt }) };
    case 'chat':
      return {
        ...action,
        text: render(action.text),
        ...(action.conversation === undefined ? {} : { conversation: render(action.conversation) }),
      };
    case 'notify':
      return { ...action, text: render(action.text), ...(action.at === undefined ? {} : { at: render(action.at) }) };
    case 'pause':
      return action.reason === undefined ? action : { ...action, reason: render(action.reason) };
  }
}

function renderDeep(value: unknown, render: (text: string) => string): unknown {
  if (typeof value === 'string') return render(value);
  if (Array.isArray(value)) return value.map((item) => renderDeep(item, render));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, renderDeep(item, render)]));
  return value;
}

/**
 * An agent's prompt over an event: trusted values in place, untrusted ones as `[event.data.subject: fenced below]`,
 * then the fence's instruction and the fenced values. `nonce` is for tests.
 */
export function renderFencedPrompt(options: {
  hook: Pick<CompiledHook, 'name' | 'trustedFields'>;
  event: EventRecord;
  prompt: string;
  nonce?: string;
}): string {
  const { hook, event } = options;
  const trusted = new Set(hook.trustedFields ?? []);
  const shown: Record<string, unknown> = {};
  const fenced: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.data)) {
    if (trusted.has(name)) shown[name] = value;
    else {
      shown[name] = `[event.data.${name}: fenced below]`;
      fenced[`event.data.${name}`] = typeof value === 'string' ? value : JSON.stringify(value);
    }
  }
  const data = templateData(hook, { ...event, data: shown });
  const text = renderTemplate(options.prompt, data);
  const referenced = Object.keys(fenced).filter((name) => text.includes(`[${name}: fenced below]`));
  if (referenced.length === 0) return text;
  const fence = fenceUntrusted(
    Object.fromEntries(referenced.map((name) => [name, fenced[name]])),
    options.nonce === undefined ? {} : { nonce: options.nonce },
  );
  return `${text}\n\n${fence.instruction}\n\n${fence.text}`;
}

/** One line for people: `notify "Mail from Anna"`, `enqueue email.inbox.check {"x":1}`, `pause work-mail`. */
export function summarizeAction(action: HookAction): string {
  const quoted = (text: string) => JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
  switch (action.kind) {
    case 'enqueue':
      return `enqueue ${action.type}${action.payload ? ` ${JSON.stringify(action.payload)}` : ''}${action.delayMs ? ` after ${action.delayMs} ms` : ''}`;
    case 'service':
      return `service ${action.name}${action.inputs ? ` ${JSON.stringify(action.inputs)}` : ''}`;
    case 'script':
      return `script ${action.name}${action.inputs ? ` ${JSON.stringify(action.inputs)}` : ''}`;
    case 'agent':
      return `agent ${quoted(action.prompt)}${action.llm ? ` (llm ${action.llm})` : ''}`;
    case 'chat':
      return `chat ${action.conversation ? `to ${action.conversation} ` : ''}${quoted(action.text)}`;
    case 'notify':
      return `notify ${quoted(action.text)}${action.delayMs ? ` after ${action.delayMs} ms` : ''}${action.at ? ` at ${action.at}` : ''}`;
    case 'pause':
      return `pause ${action.integration}${action.reason ? ` (${action.reason})` : ''}`;
  }
}
