import type { ChatMessage } from '@assistant/llm';
import type { NoteStore } from '@assistant/notes';

/** Transcripts of agent loops, one note per task: people read them, and a restarted worker resumes from them. */
export const transcriptsFolder = 'transcripts';

const dataStart = '<!-- transcript data: the worker resumes from this; edit it only if you know why -->';

/** A transcript name: a file name of letters, digits, `.`, `_` and `-`, not starting with a dot. */
const transcriptNamePattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,159}$/;

/**
 * A TranscriptStore (see @assistant/agent) kept as a note, `notes/transcripts/<name>.md` (`name` defaults to the
 * task id): the conversation rendered for people, then the messages as JSON, from which a task picks up after a
 * worker crash. Summarised (compressed) turns are appended to `<name>.archive.md`, so nothing the model saw is lost.
 * A task that runs several loops gives each its own `name`; another task passing the same name resumes that loop.
 */
export function noteTranscript(options: {
  notes: NoteStore;
  taskId: string;
  title?: string;
  name?: string;
  /**
   * What the loop keeps beside its messages (a persona loop's step count and delivered results): saved in the same
   * write as the messages, under the frontmatter's `agent_state`, and restored on load, so it is never ahead of or
   * behind the transcript it belongs to.
   */
  state?: { restore(data: unknown): void; snapshot(): unknown };
}) {
  const name = options.name ?? options.taskId;
  if (!transcriptNamePattern.test(name) || name.endsWith('.archive')) {
    throw new TypeError(
      `Expected a transcript name of letters, digits, ".", "_" and "-" (at most 160, not starting with a dot), got ${JSON.stringify(name.slice(0, 80))}`,
    );
  }
  const notePath = `${transcriptsFolder}/${name}.md`;
  const archivePath = `${transcriptsFolder}/${name}.archive.md`;
  return {
    notePath,
    async load(): Promise<ChatMessage[] | undefined> {
      const note = await options.notes.read(notePath).catch(() => undefined);
      if (!note) return undefined;
      options.state?.restore(note.data.agent_state);
      const index = note.body.indexOf(dataStart);
      if (index < 0) return undefined;
      const json = /```json\n([\s\S]*?)\n```/.exec(note.body.slice(index))?.[1];
      if (!json) return undefined;
      try {
        const messages = JSON.parse(json) as unknown;
        return Array.isArray(messages) && messages.length > 0 ? (messages as ChatMessage[]) : undefined;
      } catch {
        return undefined;
      }
    },
    async save(messages: ChatMessage[], meta: { steps: number; status: string }): Promise<void> {
      const data = {
        task: options.taskId,
        status: meta.status,
        steps: meta.steps,
        updated_at: new Date().toISOString(),
        ...(options.state === undefined ? {} : { agent_state: options.state.snapshot() }),
      };
      const body = `${render(options.title ?? `Task ${options.taskId}`, messages)}\n${dataStart}\n\n\`\`\`json\n${JSON.stringify(messages)}\n\`\`\`\n`;
      const existing = await options.notes.read(notePath).catch(() => undefined);
      if (existing) await options.notes.update(notePath, { set: data, body });
      else await options.notes.create(notePath, { data, body });
    },
    async archive(compressed: ChatMessage[]): Promise<void> {
      const section = `\n## Summarised at ${new Date().toISOString()}\n\n${render('', compressed)}`;
      const existing = await options.notes.read(archivePath).catch(() => undefined);
      if (existing) await options.notes.update(archivePath, { body: existing.body + section });
      else {
        await options.notes.create(archivePath, {
          data: { task: options.taskId },
          body: `# Earlier turns of task ${options.taskId}\n\nTurns the agent summarised to stay within its model's window.\n${section}`,
        });
      }
    },
  };
}

function render(title: string, messages: readonly ChatMessage[]): string {
  const lines = title ? [`# ${title}`, ''] : [];
  for (const message of messages) {
    if (message.role === 'system') lines.push('**system**', '', quote(message.content), '');
    else if (message.role === 'user') lines.push('**user**', '', quote(message.content), '');
    else if (message.role === 'assistant') {
      if (message.content) lines.push('**assistant**', '', quote(message.content), '');
      for (const call of message.toolCalls ?? [])
        lines.push(`**tool call** \`${call.name}\` ${'`'}${call.arguments}${'`'}`, '');
    } else lines.push(`**tool result** (${message.toolCallId})`, '', quote(message.content.slice(0, 2_000)), '');
  }
  return lines.join('\n');
}

function quote(text: string): string {
  return text
    .split('\n')
    .map((line) => `> ${line}`)
    .join('\n');
}
