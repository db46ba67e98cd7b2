import { afterEach, describe, expect, it } from 'vitest';
import { FakeAnthropicServer } from './fake-anthropic-server.ts';
import { FakeGeminiServer } from './fake-gemini-server.ts';

// What the two provider fakes share (scripting, recording, outages), driven over plain HTTP.
let fake: FakeAnthropicServer | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const headers = { 'content-type': 'application/json', 'x-api-key': 'k', 'anthropic-version': '2023-06-01' };
const body = (text = 'hi', stream = false) => ({
  model: 'claude-sonnet-4-5',
  max_tokens: 10,
  stream,
  messages: [{ role: 'user', content: text }],
});

async function ask(text = 'hi', stream = false): Promise<{ status: number; text: string }> {
  if (fake === undefined) throw new Error('start the fake first');
  const response = await fetch(`${fake.url}/messages`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body(text, stream)),
  });
  return { status: response.status, text: await response.text() };
}

describe('FakeProviderServer (through FakeAnthropicServer)', () => {
  it('records every request in order with headers and body, and marks refused ones', async () => {
    fake = await FakeAnthropicServer.start({ replies: [{ text: 'one' }] });
    await ask('first');
    await fetch(`${fake.url}/messages`, { method: 'POST', body: JSON.stringify(body('second')) });
    expect(fake.requests.map((request) => request.body?.messages)).toEqual([
      [{ role: 'user', content: 'first' }],
      [{ role: 'user', content: 'second' }],
    ]);
    expect(fake.requests[0]?.headers['anthropic-version']).toBe('2023-06-01');
    expect(fake.requests[0]?.rejected).toBeUndefined();
    expect(fake.requests[1]?.rejected).toEqual({ status: 401, message: 'x-api-key header is required' });
  });

  it('computes replies with respond, which takes precedence over replies', async () => {
    fake = await FakeAnthropicServer.start({
      replies: [{ text: 'scripted' }],
      respond: (request, index) => ({ text: `answer ${index} to ${JSON.stringify(request.body?.messages)}` }),
    });
    const first = JSON.parse((await ask('a')).text) as { content: { text: string }[] };
    expect(first.content[0]?.text).toBe('answer 0 to [{"role":"user","content":"a"}]');
  });

  it('answers the provider 500 when the replies run out, still recording the request', async () => {
    fake = await FakeAnthropicServer.start();
    const answer = await ask();
    expect(answer.status).toBe(500);
    expect(JSON.parse(answer.text)).toMatchObject({ type: 'error', error: { type: 'api_error' } });
    expect(fake.generationRequests).toHaveLength(1);
  });

  it('writes raw chunks exactly as given, with their status and headers', async () => {
    fake = await FakeAnthropicServer.start({
      replies: [{ chunks: ['data: a\n', '\n', 'data: b\n\n'], headers: { 'x-extra': '1' } }],
    });
    const response = await fetch(`${fake.url}/messages`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body('hi', true)),
    });
    expect(response.headers.get('x-extra')).toBe('1');
    expect(response.headers.get('content-type')).toBe('text/event-stream');
    expect(await response.text()).toBe('data: a\n\ndata: b\n\n');
  });

  it('fails every generation with failWith until recover, consuming no reply', async () => {
    fake = await FakeAnthropicServer.start({ replies: [{ text: 'after' }] });
    fake.failWith({ status: 529 });
    const failed = await ask();
    expect(failed.status).toBe(529);
    expect(JSON.parse(failed.text)).toMatchObject({ error: { type: 'overloaded_error', message: 'Overloaded' } });
    await fake.recover();
    expect((await ask()).status).toBe(200);
  });

  it('refuses connections until recover, then answers on the same address', async () => {
    fake = await FakeAnthropicServer.start({ replies: [{ text: 'back' }] });
    await fake.refuseConnections();
    await expect(ask()).rejects.toThrow();
    await fake.recover();
    expect(JSON.parse((await ask()).text)).toMatchObject({ content: [{ type: 'text', text: 'back' }] });
  });

  it('closes idempotently, also while refusing connections, and supports await using', async () => {
    {
      await using gemini = await FakeGeminiServer.start();
      await gemini.refuseConnections();
      await gemini.close();
    }
    fake = await FakeAnthropicServer.start();
    await Promise.all([fake.close(), fake.close()]);
  });
});
