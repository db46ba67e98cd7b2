/** One server-sent event as the chat and task streams send them: `event:`, `id:` and one `data:` line of JSON. */
export interface ServerSentEvent {
  type: string;
  id: string;
  data: Record<string, unknown>;
}

/**
 * Reads an SSE response, calling `onEvent` for each event (comments and events without data are skipped), until
 * the response ends or its request is aborted.
 */
export async function readServerSentEvents(
  response: Response,
  onEvent: (event: ServerSentEvent) => void,
): Promise<void> {
  const reader = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true as const }));
    if (done) return;
    buffer += value;
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const type = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (type && data) onEvent({ type, id: /^id: (.*)$/m.exec(block)?.[1] ?? '', data: JSON.parse(data) });
    }
  }
}
