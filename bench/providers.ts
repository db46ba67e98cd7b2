// bench:providers — what a provider adapter costs.
//
// 1. Adapter overhead per call: our request → the provider's request body → its answer → our response, through the
//    real adapter (createProviderChatModel) with an in-process `fetch` that returns a fixed answer, so no network and
//    no server: what is measured is translation both ways, the SDK's validation and our retry loop. p50/p95 per
//    provider, non-streaming and streaming. Goal: p50 ≤ 1 ms.
// 2. Resident memory: a fresh Node process that loads @assistant/llm and creates one openai-compatible profile, against
//    one that creates a profile for every provider, and each after its first request (when the provider's library is
//    loaded). The worker builds its profiles the same way at start and sends nothing until a task asks, so the idle
//    figures are the worker's idle cost of configuring the providers. Three runs each, VmRSS.
//
// Usage: node bench/providers.ts [--calls 2000]
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import type { ChatRequest, ProviderKind } from '@assistant/llm';
import { createProviderChatModel } from '@assistant/llm';

const callsArg = process.argv.indexOf('--calls');
const calls = callsArg === -1 ? 2_000 : Number(process.argv[callsArg + 1]);

const request: ChatRequest = {
  messages: [
    {
      role: 'system',
      content: `You are a careful assistant. ${"Follow the owner's rules. ".repeat(20)}\n\nCurrent time: 2026-11-28T04:00:00+01:00 (Saturday), time zone Europe/Paris.`,
    },
    { role: 'user', content: 'Find the invoice from ACME and tell me when it is due.' },
    {
      role: 'assistant',
      content: 'Looking it up.',
      toolCalls: [{ id: 'call_1', name: 'notes_search', arguments: '{"query":"ACME invoice"}' }],
    },
    { role: 'tool', toolCallId: 'call_1', content: 'Invoice 2026-114 from ACME, 420 EUR, due 2026-12-15.' },
    { role: 'assistant', content: 'It is due on 15 December.' },
    { role: 'user', content: 'Remind me a week before.' },
  ],
  tools: ['notes_search', 'reminder_create', 'mail_send'].map((name) => ({
    name,
    description: `The ${name} tool.`,
    parameters: {
      type: 'object',
      properties: { query: { type: 'string' }, when: { type: 'string' }, text: { type: 'string' } },
      required: ['query'],
    },
  })),
};

const json = (body: unknown) =>
  new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
const sse = (events: string[]) =>
  new Response(events.join(''), { status: 200, headers: { 'content-type': 'text/event-stream' } });

/** Each provider's fixed answer: a short text and one tool call, with usage; as JSON and as a stream. */
const answers: Record<ProviderKind, { json: () => Response; stream: () => Response; baseUrl: string; model: string }> =
  {
    'openai-compatible': openAiAnswers(),
    openai: openAiAnswers(),
    anthropic: {
      baseUrl: 'http://bench.invalid/v1',
      model: 'claude-sonnet-4-5',
      json: () =>
        json({
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-5-20250929',
          content: [
            { type: 'text', text: 'I will set it.' },
            { type: 'tool_use', id: 'toolu_1', name: 'reminder_create', input: { query: 'ACME', when: '2026-12-08' } },
          ],
          stop_reason: 'tool_use',
          stop_sequence: null,
          usage: { input_tokens: 300, output_tokens: 20, cache_read_input_tokens: 200, cache_creation_input_tokens: 0 },
        }),
      stream: () =>
        sse(
          [
            {
              type: 'message_start',
              message: {
                id: 'msg_1',
                type: 'message',
                role: 'assistant',
                model: 'claude-sonnet-4-5-20250929',
                content: [],
                stop_reason: null,
                usage: { input_tokens: 300, output_tokens: 1, cache_read_input_tokens: 200 },
              },
            },
            { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
            { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'I will ' } },
            { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'set it.' } },
            { type: 'content_block_stop', index: 0 },
            {
              type: 'content_block_start',
              index: 1,
              content_block: { type: 'tool_use', id: 'toolu_1', name: 'reminder_create', input: {} },
            },
            {
              type: 'content_block_delta',
              index: 1,
              delta: { type: 'input_json_delta', partial_json: '{"query":"ACME","when":"2026-12-08"}' },
            },
            { type: 'content_block_stop', index: 1 },
            {
              type: 'message_delta',
              delta: { stop_reason: 'tool_use', stop_sequence: null },
              usage: { output_tokens: 20 },
            },
            { type: 'message_stop' },
          ].map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`),
        ),
    },
    google: {
      baseUrl: 'http://bench.invalid/v1beta',
      model: 'gemini-2.5-flash',
      json: () =>
        json({
          candidates: [
            {
              content: {
                role: 'model',
                parts: [
                  { text: 'I will set it.' },
                  { functionCall: { name: 'reminder_create', args: { query: 'ACME', when: '2026-12-08' } } },
                ],
              },
              finishReason: 'STOP',
            },
          ],
          usageMetadata: {
            promptTokenCount: 300,
            candidatesTokenCount: 20,
            totalTokenCount: 320,
            cachedContentTokenCount: 200,
          },
          modelVersion: 'gemini-2.5-flash',
        }),
      stream: () =>
        sse(
          [
            { candidates: [{ content: { role: 'model', parts: [{ text: 'I will ' }] } }] },
            { candidates: [{ content: { role: 'model', parts: [{ text: 'set it.' }] } }] },
            {
              candidates: [
                {
                  content: {
                    role: 'model',
                    parts: [{ functionCall: { name: 'reminder_create', args: { query: 'ACME', when: '2026-12-08' } } }],
                  },
                  finishReason: 'STOP',
                },
              ],
              usageMetadata: { promptTokenCount: 300, candidatesTokenCount: 20, totalTokenCount: 320 },
            },
          ].map((event) => `data: ${JSON.stringify(event)}\r\n\r\n`),
        ),
    },
  };

function openAiAnswers() {
  const message = {
    role: 'assistant',
    content: 'I will set it.',
    tool_calls: [
      {
        id: 'call_2',
        type: 'function',
        function: { name: 'reminder_create', arguments: '{"query":"ACME","when":"2026-12-08"}' },
      },
    ],
  };
  const usage = {
    prompt_tokens: 300,
    completion_tokens: 20,
    total_tokens: 320,
    prompt_tokens_details: { cached_tokens: 200 },
  };
  return {
    baseUrl: 'http://bench.invalid/v1',
    model: 'gpt-4.1-mini',
    json: () =>
      json({
        id: 'c1',
        object: 'chat.completion',
        created: 1,
        model: 'gpt-4.1-mini',
        choices: [{ index: 0, message, finish_reason: 'tool_calls' }],
        usage,
      }),
    stream: () =>
      sse(
        [
          { choices: [{ index: 0, delta: { role: 'assistant', content: 'I will ' } }] },
          { choices: [{ index: 0, delta: { content: 'set it.' } }] },
          {
            choices: [
              {
                index: 0,
                delta: {
                  tool_calls: [{ index: 0, id: 'call_2', type: 'function', function: message.tool_calls[0]?.function }],
                },
              },
            ],
          },
          { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
          { choices: [], usage },
        ]
          .map(
            (chunk) =>
              `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4.1-mini', ...chunk })}\n\n`,
          )
          .concat('data: [DONE]\n\n'),
      ),
  };
}

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN;
}

async function overhead(provider: ProviderKind, streamed: boolean): Promise<{ p50: number; p95: number }> {
  const answer = answers[provider];
  const model = createProviderChatModel({
    provider,
    name: 'bench',
    model: answer.model,
    baseUrl: answer.baseUrl,
    apiKey: 'bench-key',
    maxRetries: 0,
    fetch: async (_input, init) => {
      const body = JSON.parse(String(init?.body ?? '{}')) as { stream?: boolean };
      const wantsStream =
        provider === 'google' ? String(_input).includes('streamGenerateContent') : body.stream === true;
      return wantsStream ? answer.stream() : answer.json();
    },
  });
  const options = streamed ? { onDelta: () => {} } : {};
  for (let index = 0; index < 200; index += 1) await model.chat(request, options); // Warm-up: JIT and lazy imports.
  const samples: number[] = [];
  for (let index = 0; index < calls; index += 1) {
    const started = performance.now();
    await model.chat(request, options);
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 0.5), p95: percentile(samples, 0.95) };
}

/** Run in a child: create profiles, optionally send one request each, print VmRSS in MB. */
async function childRss(providers: ProviderKind[], send: boolean): Promise<void> {
  const models = providers.map((provider) =>
    createProviderChatModel({
      provider,
      name: provider,
      model: answers[provider].model,
      baseUrl: answers[provider].baseUrl,
      apiKey: 'bench-key',
      fetch: async () => answers[provider].json(),
    }),
  );
  if (send) for (const model of models) await model.chat(request);
  await new Promise((resolve) => setTimeout(resolve, 500));
  globalThis.gc?.();
  const status = (await import('node:fs')).readFileSync('/proc/self/status', 'utf8');
  const kilobytes = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
  process.stdout.write(`${(kilobytes / 1024).toFixed(1)}\n`);
}

if (process.argv[2] === '--child') {
  await childRss(process.argv[3]?.split(',') as ProviderKind[], process.argv[4] === 'send');
} else {
  console.log(
    `bench:providers on ${os.cpus()[0]?.model ?? 'unknown CPU'} × ${os.cpus().length}, Node ${process.version}, load ${os
      .loadavg()
      .map((load) => load.toFixed(2))
      .join(' ')}`,
  );
  console.log(`\nAdapter overhead per call (${calls} calls after 200 warm-up, in-process fetch, no network):`);
  console.log('| provider | mode | p50 ms | p95 ms |\n|---|---|---:|---:|');
  for (const provider of ['openai-compatible', 'anthropic', 'google'] as const) {
    for (const streamed of [false, true]) {
      const { p50, p95 } = await overhead(provider, streamed);
      console.log(`| ${provider} | ${streamed ? 'stream' : 'plain'} | ${p50.toFixed(3)} | ${p95.toFixed(3)} |`);
    }
  }
  console.log('\nResident memory of a fresh process with @assistant/llm loaded (VmRSS MB, three runs):');
  const scenarios: [string, string, boolean][] = [
    ['one openai-compatible profile, idle', 'openai-compatible', false],
    ['openai-compatible + openai + anthropic + google, idle', 'openai-compatible,openai,anthropic,google', false],
    ['one openai-compatible profile, after one request', 'openai-compatible', true],
    ['all four, after one request each', 'openai-compatible,openai,anthropic,google', true],
  ];
  console.log('| profiles | run 1 | run 2 | run 3 |\n|---|---:|---:|---:|');
  for (const [label, providers, send] of scenarios) {
    const runs = [0, 1, 2].map(() =>
      execFileSync(
        process.execPath,
        ['--expose-gc', import.meta.filename, '--child', providers, send ? 'send' : 'idle'],
        {
          encoding: 'utf8',
        },
      ).trim(),
    );
    console.log(`| ${label} | ${runs.join(' | ')} |`);
  }
}
