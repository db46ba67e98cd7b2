import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** How the tool's answer is sent: one JSON body, one server-sent event, or the body of an HTTP 500 refusal. */
export type AnswerFormat = 'json' | 'sse' | 'refusal';

export interface HugeAnswerServer extends AsyncDisposable {
  url: string;
  /** Bytes of the tool answers written so far (what the client took before it hung up, plus what the socket held). */
  answerBytesWritten(): number;
  /** tools/call requests received. */
  calls(): number;
}

const chunk = Buffer.alloc(64 * 1024, 'x');

/**
 * A streamable-HTTP MCP server on loopback, written by hand so that its one tool, `huge`, can answer with
 * `answerBytes` of text generated as it is sent (never held): it stops writing when the client hangs up. `small`
 * answers `ok`. Stateless: no session, no standalone GET stream (405, as the spec allows).
 */
export async function startHugeAnswerServer(options: {
  answerBytes: number;
  format: AnswerFormat;
}): Promise<HugeAnswerServer> {
  let written = 0;
  let calls = 0;
  const http = createServer((request, response) => {
    void handle(request, response).catch(() => response.destroy());
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (request.method !== 'POST') {
      response.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    let text = '';
    for await (const part of request) text += String(part);
    const message = JSON.parse(text) as { id?: number | string; method: string; params?: Record<string, unknown> };
    if (message.id === undefined) {
      response.writeHead(202).end();
      return;
    }
    const answer = (result: unknown) =>
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }));
    if (message.method === 'initialize') {
      answer({
        protocolVersion: message.params?.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: 'huge-answer', version: '1.0.0' },
      });
      return;
    }
    if (message.method === 'tools/list') {
      answer({
        tools: [
          {
            name: 'huge',
            description: 'Answers with a lot.',
            inputSchema: { type: 'object' },
            annotations: { readOnlyHint: true },
          },
          {
            name: 'small',
            description: 'Answers ok.',
            inputSchema: { type: 'object' },
            annotations: { readOnlyHint: true },
          },
        ],
      });
      return;
    }
    if (message.method !== 'tools/call') {
      answer({});
      return;
    }
    calls += 1;
    if (message.params?.name === 'small') {
      answer({ content: [{ type: 'text', text: 'ok' }] });
      return;
    }
    const sse = options.format === 'sse';
    const refusal = options.format === 'refusal';
    response.writeHead(refusal ? 500 : 200, {
      'content-type': sse ? 'text/event-stream' : refusal ? 'text/plain' : 'application/json',
    });
    const before = refusal
      ? 'Internal error: '
      : `${sse ? 'event: message\ndata: ' : ''}{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":{"content":[{"type":"text","text":"`;
    const after = refusal ? '' : `"}]}}${sse ? '\n\n' : ''}`;
    let open = true;
    response.on('close', () => {
      open = false;
    });
    response.write(before);
    let left = options.answerBytes;
    while (open && left > 0) {
      const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
      left -= piece.length;
      written += piece.length;
      if (!response.write(piece)) {
        await new Promise<void>((resolve) => {
          const done = () => {
            response.off('drain', done);
            response.off('close', done);
            resolve();
          };
          response.on('drain', done);
          response.on('close', done);
        });
      }
    }
    if (open) response.end(after);
  }

  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    answerBytesWritten: () => written,
    calls: () => calls,
    [Symbol.asyncDispose]: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
