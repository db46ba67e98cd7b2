import * as z from 'zod';
import type { EventField, EventFieldType, EventTypeDefinition } from './event-types.ts';

/** A field as written below: its type, whether an outsider can set it, and whether every event carries it. */
interface FieldSpec {
  type: EventFieldType;
  trusted: boolean;
  required?: boolean;
  description?: string;
}

const t = (type: EventFieldType, description: string, required = true): FieldSpec => ({
  type,
  trusted: true,
  required,
  description,
});
const u = (type: EventFieldType, description: string, required = true): FieldSpec => ({
  type,
  trusted: false,
  required,
  description,
});

/**
 * The built-in event types. Payloads stay small (no mail bodies, no note text): an event says what happened and
 * where to look. `trusted: false` marks what an outsider wrote (a mail's From and subject, a GitHub user's login).
 */
const builtins: Record<string, { description: string; fields: Record<string, FieldSpec> }> = {
  'mail.received': {
    description: 'A new mail was taken in by an email instance.',
    fields: {
      instance: t('string', 'the email instance'),
      message_id: u('string', 'the Message-ID header, or the UIDVALIDITY/UID when it has none'),
      from_address: u('string', 'the sender address, lower case'),
      from_domain: u('string', "the sender address's domain, lower case"),
      to: u('list', 'the recipient addresses', false),
      subject: u('string', 'the subject line', false),
      date: u('date', 'the Date header', false),
      folder: t('string', 'the folder it arrived in', false),
      is_noreply: u('boolean', 'the sender looks like a no-reply address', false),
      authenticated: t('boolean', "the sender passed DKIM/DMARC as the instance's authserv_ids report it", false),
      note: t('string', "the mail's note", false),
    },
  },
  'note.created': {
    description: 'Assistant created a note.',
    fields: { path: t('string', 'the note path under the notes root'), folder: t('string', 'its folder', false) },
  },
  'note.changed': {
    description: 'Assistant changed a note.',
    fields: {
      path: t('string', 'the note path under the notes root'),
      folder: t('string', 'its folder', false),
      keys: t('list', 'the frontmatter keys that changed', false),
    },
  },
  'item.classified': {
    description:
      "An item (a mail, a pull request) was classified by the model: `classifications` holds each answer (the model's, so hooks test them through `ask:` or as untrusted).",
    fields: {
      integration: t('string', 'the integration'),
      instance: t('string', 'the instance'),
      item: t('string', "the item's note"),
    },
  },
  'task.done': {
    description: 'A task finished.',
    fields: {
      task: t('string', 'the task id'),
      task_type: t('string', 'the task type'),
      integration: t('string', 'the integration instance', false),
      attempts: t('number', 'attempts it took'),
    },
  },
  'task.failed': {
    description: 'A task failed for good (no retry left, or unrecoverable).',
    fields: {
      task: t('string', 'the task id'),
      task_type: t('string', 'the task type'),
      integration: t('string', 'the integration instance', false),
      attempts: t('number', 'attempts it took'),
      error_code: t('string', 'the error code, if one', false),
      error: u('string', 'the error message', false),
    },
  },
  'approval.requested': {
    description: 'An action waits for the owner.',
    fields: { approval: t('string', 'the approval id'), kind: t('string', 'what asks', false) },
  },
  'approval.decided': {
    description: 'The owner (or expiry) decided an approval.',
    fields: {
      approval: t('string', 'the approval id'),
      decision: t('string', 'approved, rejected or expired'),
      kind: t('string', 'what asked', false),
    },
  },
  'chat.message': {
    description: 'A chat message was stored.',
    fields: {
      conversation: t('string', 'the conversation id'),
      message: t('string', 'the message id'),
      role: t('string', 'user or assistant'),
      text: u('string', 'the text, cut to 500 characters', false),
    },
  },
  'github.delivery': {
    description: 'A GitHub webhook delivery was accepted.',
    fields: {
      instance: t('string', 'the GitHub instance'),
      event: t('string', 'the X-GitHub-Event name'),
      delivery: t('string', 'the X-GitHub-Delivery id'),
      action: u('string', "the payload's action", false),
      repository: u('string', 'owner/name', false),
      sender: u('string', "the sender's login", false),
    },
  },
  'schedule.fired': {
    description: 'A cron schedule fired and enqueued its task.',
    fields: {
      schedule: t('string', 'the schedule name'),
      task_type: t('string', 'the first task type it enqueues', false),
      reason: t('string', 'why it ran: schedule, catch-up or first run', false),
    },
  },
  'time.tick': {
    description: "A minute began (the hook runner's clock), for time-based hooks.",
    fields: {
      minute: t('date', 'the minute, ISO 8601 UTC'),
      weekday: t('string', "the owner's weekday (monday…sunday)"),
      hour: t('number', "the owner's hour, 0–23"),
      minute_of_hour: t('number', 'the minute, 0–59'),
    },
  },
  'memory.task_due': {
    description:
      "An owner's task (`tasks/*.md`) came due: once per task and due date (a task moved to another date fires again then).",
    fields: {
      task: t('string', "the task's note"),
      id: t('string', 'the task id'),
      // Extracted tasks take their title from a mail or a GitHub thread.
      title: u('string', "the task's title"),
      due: t('date', 'the due date (YYYY-MM-DD) or instant'),
      created_by: t('string', 'owner, extraction or chat'),
      about: u('list', 'contacts and topics it is about', false),
      source: u('string', 'the item it was extracted from', false),
    },
  },
  'hook.fired': {
    description: 'A hook fired.',
    fields: {
      hook: t('string', 'the hook name'),
      event: t('string', 'the event that fired it', false),
      firing: t('string', 'the firing id'),
    },
  },
};

function valueSchema(type: EventFieldType): z.ZodType {
  switch (type) {
    case 'boolean':
      return z.boolean();
    case 'number':
      return z.number();
    case 'date':
      return z.string().refine((value) => Number.isFinite(Date.parse(value)), 'a date (ISO 8601)');
    case 'list':
      return z.array(z.union([z.string(), z.number(), z.boolean()]));
    case 'string':
      return z.string();
  }
}

function definition(
  name: string,
  spec: { description: string; fields: Record<string, FieldSpec> },
  origin: string,
): EventTypeDefinition {
  const shape: Record<string, z.ZodType> = {};
  const fields: Record<string, EventField> = {};
  for (const [key, field] of Object.entries(spec.fields)) {
    shape[key] = field.required === false ? valueSchema(field.type).optional() : valueSchema(field.type);
    fields[key] = {
      type: field.type,
      trusted: field.trusted,
      ...(field.description === undefined ? {} : { description: field.description }),
    };
  }
  // Loose: a producer may add detail a hook cannot test; what hooks test is checked.
  return {
    name,
    description: spec.description,
    schema: z.looseObject(shape) as z.ZodType<Record<string, unknown>>,
    fields,
    origin,
  };
}

/** What a manifest declares under `events:` (see packages/manifests). */
export interface ManifestEvents {
  name: string;
  events: Record<
    string,
    {
      description: string;
      fields: Record<
        string,
        EventFieldType | { type: EventFieldType; trusted?: boolean | undefined; description?: string | undefined }
      >;
    }
  >;
}

/** The event types the ledger knows: the built-in ones, and those integrations declare in their manifests. */
export class EventRegistry {
  readonly #types = new Map<string, EventTypeDefinition>();

  constructor() {
    for (const [name, spec] of Object.entries(builtins)) this.#types.set(name, definition(name, spec, 'builtin'));
  }

  /** The registry with the types each manifest declares, as `{integration}.{name}`; optional fields, untrusted unless said. */
  static withManifests(manifests: Iterable<ManifestEvents>): EventRegistry {
    const registry = new EventRegistry();
    for (const manifest of manifests) {
      for (const [name, declared] of Object.entries(manifest.events)) {
        const full = `${manifest.name}.${name}`;
        if (registry.#types.has(full)) continue;
        const fields: Record<string, FieldSpec> = {};
        for (const [key, field] of Object.entries(declared.fields)) {
          const spec = typeof field === 'string' ? { type: field } : field;
          fields[key] = {
            type: spec.type,
            trusted: typeof field === 'string' ? false : (field.trusted ?? false),
            required: false,
            ...(typeof field !== 'string' && field.description !== undefined ? { description: field.description } : {}),
          };
        }
        registry.#types.set(full, definition(full, { description: declared.description, fields }, manifest.name));
      }
    }
    return registry;
  }

  get(type: string): EventTypeDefinition | undefined {
    return this.#types.get(type);
  }

  list(): EventTypeDefinition[] {
    return [...this.#types.values()];
  }

  names(): string[] {
    return [...this.#types.keys()];
  }

  /** Undefined when `data` fits the type's schema; else what is wrong, for the stored event's `problem`. */
  check(type: string, data: unknown): string | undefined {
    const found = this.#types.get(type);
    if (!found) return `unknown event type "${type}"`;
    if (typeof data !== 'object' || data === null || Array.isArray(data)) return 'the payload is not an object';
    const parsed = found.schema.safeParse(data);
    if (parsed.success) return undefined;
    return parsed.error.issues
      .slice(0, 3)
      .map((issue) => `${issue.path.join('.') || '(payload)'}: ${issue.message}`)
      .join('; ');
  }
}
