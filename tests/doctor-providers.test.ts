// Issue 32, bad input: `assistant doctor` asks each profile's provider about its model, with the provider's own key
// header, and says which profile, at which line of config.yaml, and why: the key refused, or the model unknown. Against
// the fake Anthropic and Gemini servers (real HTTP on loopback) and a small OpenAI model endpoint.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FakeAnthropicServer, FakeGeminiServer } from '@assistant/llm/testing';
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

describe('assistant doctor: LLM profiles of every provider', () => {
  it('names the profile and its line when the key is refused or the model unknown, and passes a known model', {
    timeout: 120_000,
  }, async () => {
    await using anthropic = await FakeAnthropicServer.start({
      apiKey: 'sk-ant-good',
      models: ['claude-sonnet-4-5'],
    });
    await using gemini = await FakeGeminiServer.start({ apiKey: 'gemini-good', models: ['gemini-2.5-flash'] });
    // OpenAI's `GET /v1/models/{model}`: 401 without the right bearer key, 404 for a model it does not have.
    const seen: string[] = [];
    const openai = createServer((request, response) => {
      seen.push(`${request.method} ${request.url} ${request.headers.authorization ?? ''}`);
      response.setHeader('content-type', 'application/json');
      if (request.headers.authorization !== 'Bearer sk-openai-good') {
        response.statusCode = 401;
        response.end(
          JSON.stringify({ error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } }),
        );
      } else if (request.url === '/v1/models/gpt-4.1') {
        response.end(JSON.stringify({ id: 'gpt-4.1', object: 'model', created: 0, owned_by: 'openai' }));
      } else {
        response.statusCode = 404;
        response.end(JSON.stringify({ error: { message: 'The model does not exist', code: 'model_not_found' } }));
      }
    });
    await new Promise<void>((resolve) => openai.listen(0, '127.0.0.1', resolve));
    await using _openai = {
      [Symbol.asyncDispose]: () => new Promise<void>((resolve) => openai.close(() => resolve())),
    };
    const openaiUrl = `http://127.0.0.1:${(openai.address() as AddressInfo).port}/v1`;

    await using dir = await tempDir();
    await dir.write(
      'secrets.yaml',
      'good_claude: sk-ant-good\nbad_claude: sk-ant-wrong\ngood_gemini: gemini-good\nbad_gemini: gemini-wrong\ngood_openai: sk-openai-good\n',
      0o600,
    );
    await dir.write(
      'config.yaml',
      [
        'data_dir: ./data',
        'llms:',
        '  claude:',
        '    provider: anthropic',
        `    base_url: "${anthropic.url}"`,
        '    model: claude-sonnet-4-5',
        '    api_key: !secret good_claude',
        '  claude_refused:',
        '    provider: anthropic',
        `    base_url: "${anthropic.url}"`,
        '    model: claude-sonnet-4-5',
        '    api_key: !secret bad_claude',
        '  claude_unknown:',
        '    provider: anthropic',
        `    base_url: "${anthropic.url}"`,
        '    model: claude-sonet-9',
        '    api_key: !secret good_claude',
        `  gemini: {provider: google, base_url: "${gemini.url}", model: gemini-2.5-flash, api_key: !secret good_gemini}`,
        `  gemini_refused: {provider: google, base_url: "${gemini.url}", model: gemini-2.5-flash, api_key: !secret bad_gemini}`,
        `  gemini_unknown: {provider: google, base_url: "${gemini.url}", model: gemini-9, api_key: !secret good_gemini}`,
        `  gpt: {provider: openai, base_url: "${openaiUrl}", model: gpt-4.1, api_key: !secret good_openai}`,
        `  gpt_unknown: {provider: openai, base_url: "${openaiUrl}", model: gpt-9, api_key: !secret good_openai}`,
        '',
      ].join('\n'),
    );
    const run = await runCli(['doctor'], { cwd: dir.path, timeoutMs: 90_000 });
    const line = (profile: string) =>
      run.stdout.split('\n').find((text) => text.includes(`llm ${profile} (`)) ?? `(no line for ${profile})`;

    expect(line('claude')).toMatch(
      /^ok {3}llm claude \(config\.yaml:6\): anthropic GET http:\/\/127\.0\.0\.1:\d+\/v1\/models\/claude-sonnet-4-5 answered HTTP 200, model claude-sonnet-4-5 available$/,
    );
    expect(line('claude_refused')).toMatch(
      /^FAIL llm claude_refused \(config\.yaml:11\): anthropic GET .* answered HTTP 401: the api_key was refused$/,
    );
    expect(line('claude_unknown')).toMatch(
      /^FAIL llm claude_unknown \(config\.yaml:16\): anthropic GET .*\/models\/claude-sonet-9 answered HTTP 404: the provider does not know model claude-sonet-9$/,
    );
    expect(line('gemini')).toMatch(
      /^ok {3}llm gemini \(config\.yaml:18\): google GET .*\/v1beta\/models\/gemini-2\.5-flash /,
    );
    expect(line('gemini_refused')).toMatch(/^FAIL llm gemini_refused \(config\.yaml:19\): .* the api_key was refused$/);
    expect(line('gemini_unknown')).toMatch(
      /^FAIL llm gemini_unknown \(config\.yaml:20\): .* the provider does not know model gemini-9$/,
    );
    expect(line('gpt')).toMatch(
      /^ok {3}llm gpt \(config\.yaml:21\): openai GET .*\/v1\/models\/gpt-4\.1 answered HTTP 200/,
    );
    expect(line('gpt_unknown')).toMatch(
      /^FAIL llm gpt_unknown \(config\.yaml:22\): .* the provider does not know model gpt-9$/,
    );
    // Each provider got its own key header, and the key never reached the output.
    const anthropicProbes = anthropic.requests.filter((request) => request.method === 'GET');
    expect(anthropicProbes.map((request) => request.headers['anthropic-version'])).toEqual([
      '2023-06-01',
      '2023-06-01',
      '2023-06-01',
    ]);
    expect(gemini.requests.every((request) => request.headers['x-goog-api-key'] !== undefined)).toBe(true);
    expect(seen.every((request) => request.endsWith('Bearer sk-openai-good'))).toBe(true);
    expect(run.stdout).not.toMatch(/sk-ant-good|gemini-good|sk-openai-good/);
    expect(run.code).toBe(1);
  });
});
