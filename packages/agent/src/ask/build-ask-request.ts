import type { ChatMessage, ChatRequest } from '@assistant/llm';
import { renderTranscript } from '../internal/render-transcript.ts';

/** One loop's transcript as it was when the question came. */
export interface TranscriptSnapshot {
  lineage: readonly string[];
  messages: readonly ChatMessage[];
}

const askSystemPrompt =
  'You answer questions about the work of an agent that is still running. You can only read the transcripts ' +
  'below (the agent, then the sub-agents it started, each named by its lineage); you cannot act or call tools. ' +
  'Answer briefly from what the transcripts show, and say so when they do not show it.';

/** The read-only request behind `ask()`: the snapshots as text, then the question; no tools are offered. */
export function buildAskRequest(question: string, snapshots: readonly TranscriptSnapshot[]): ChatRequest {
  const transcripts = snapshots
    .map((snapshot) => `## Transcript of ${snapshot.lineage.join(' › ')}\n\n${renderTranscript(snapshot.messages)}`)
    .join('\n\n');
  return {
    messages: [
      { role: 'system', content: askSystemPrompt },
      { role: 'user', content: `${transcripts}\n\nQuestion: ${question}` },
    ],
  };
}
