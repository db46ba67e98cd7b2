import { defineTool, type HandlerContext, type Tool } from '@assistant/sdk';
import * as z from 'zod';

/** What the tools of a chat turn need besides the handler context. */
export interface ChatToolsOptions {
  context: HandlerContext;
  conversationId: string;
  /**
   * True when the conversation's peer is the owner on an authenticated channel (REST with the API token, the local
   * CLI, a configured Telegram user): only then may the model approve or reject an approval.
   */
  ownerPeer: boolean;
  /** The owner's messages of this turn so far (its batch, steered messages, answers): the texts the owner wrote. */
  ownerTexts: () => readonly string[];
  /** Shows an approval request in the chat (an `approval` event on the conversation's event log). */
  showApproval: (approval: { id: string; title: string; summary: string }) => Promise<void>;
}

/** The tools of a chat turn. Read-only ones run freely; the rest go through the action gate (approvals). */
export function chatTools(options: ChatToolsOptions): Tool[] {
  const { context } = options;
  return [
    defineTool({
      name: 'search_notes',
      description: 'Finds notes whose text contains the query (any case). Returns up to 20 paths with their titles.',
      input: z.object({ query: z.string().min(1) }),
      run: async ({ query }) => {
        const needle = query.toLowerCase();
        const notes = await context.notes.query({});
        return notes
          .filter((note) => `${JSON.stringify(note.data)}\n${note.body}`.toLowerCase().includes(needle))
          .slice(0, 20)
          .map((note) => ({ path: note.path, title: note.data.title ?? note.data.subject ?? null }));
      },
    }),
    defineTool({
      name: 'read_note',
      description: 'Reads one note by its path: its fields and its text (cut at 4,000 characters).',
      input: z.object({ path: z.string().min(1) }),
      run: async ({ path }) => {
        const note = await context.notes.read(path);
        return note ? { data: note.data, body: note.body.slice(0, 4_000) } : { error: `no note ${path}` };
      },
    }),
  ];
}
