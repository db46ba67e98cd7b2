import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Turns the real provider captures under tests/fixtures/llm/captures/ into the answers the scenarios need, frame
 * by frame: the event sequence, ids, usage fields, model names and chunking stay as the provider sent them; only the
 * content (text, thinking text, tool names and arguments) is replaced, spread over the capture's own delta frames.
 * Every edit is written down, and the list becomes the fixture's `source:` citation.
 */

/** Where the copies live, and where they were copied from. */
const capturesDirectory = path.join(import.meta.dirname, '..', 'fixtures', 'llm', 'captures', 'vercel-ai');
const upstream = {
  repository: 'https://github.com/vercel/ai',
  commit: 'ed857f50f112e23930b0c2dd8d532cc8bebbc911',
};

/** Each copied capture: its path in the AI SDK repository, and which of its lines were kept when not all. */
const captures = {
  'anthropic-text.chunks.txt': { path: 'packages/anthropic/src/__fixtures__/anthropic-text.chunks.txt' },
  'anthropic-json-tool.1.json': { path: 'packages/anthropic/src/__fixtures__/anthropic-json-tool.1.json' },
  'anthropic-json-tool.1.chunks.txt': { path: 'packages/anthropic/src/__fixtures__/anthropic-json-tool.1.chunks.txt' },
  'anthropic-tool-no-args.chunks.txt': {
    path: 'packages/anthropic/src/__fixtures__/anthropic-tool-no-args.chunks.txt',
  },
  'anthropic-clear-thinking.1.chunks.txt': {
    path: 'packages/anthropic/src/__fixtures__/anthropic-clear-thinking.1.chunks.txt',
  },
  'google-text.json': { path: 'packages/google/src/__fixtures__/google-text.json' },
  'google-text.chunks.txt': { path: 'packages/google/src/__fixtures__/google-text.chunks.txt' },
  'google-tool-call.chunks.txt': { path: 'packages/google/src/__fixtures__/google-tool-call.chunks.txt' },
  'google-tool-call-gemini3.chunks.txt': {
    path: 'packages/google/src/__fixtures__/google-tool-call-gemini3.chunks.txt',
  },
  'google-reasoning.chunks.txt': { path: 'packages/google/src/__fixtures__/google-reasoning.chunks.txt' },
  'google-stream-no-args-tool-call.chunks.txt': {
    path: 'packages/google/src/__fixtures__/google-stream-no-args-tool-call.chunks.txt',
  },
  'deepseek-json.json': { path: 'packages/deepseek/src/chat/__fixtures__/deepseek-json.json' },
  'deepseek-tool-call.chunks.txt': { path: 'packages/deepseek/src/chat/__fixtures__/deepseek-tool-call.chunks.txt' },
  'deepseek-reasoning.chunks.excerpt.txt': {
    path: 'packages/deepseek/src/chat/__fixtures__/deepseek-reasoning.chunks.txt',
    lines: 'lines 1-12 and 206-220 of 220 (the start of the reasoning, the answer, the usage)',
  },
} as const satisfies Record<string, { path: string; lines?: string }>;

export type CaptureName = keyof typeof captures;

/** What the fake server sends for one exchange, and the citation that goes into the fixture. */
export interface AdaptedExchange {
  reply: { rawEvents: object[] } | { rawBody: object };
  source: CaptureCitation;
}

type Frame = Record<string, unknown>;

/** The capture's events (a `.chunks.txt`, one JSON a line) or its body (a `.json`). */
function readCapture(name: CaptureName): Frame[] {
  const text = readFileSync(path.join(capturesDirectory, name), 'utf8');
  if (name.endsWith('.json')) return [JSON.parse(text) as Frame];
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Frame);
}

/**
 * The fixture's `source:`: the upstream repository, the capture's path and commit, where its copy is, and every
 * edit. A fixture built from two captures names the second under `also_from`.
 */
export type CaptureCitation = {
  repository: string;
  path: string;
  commit: string;
  /** The copy in this repository (and which lines, for an excerpt). */
  copy: string;
  edited: string;
  also_from?: { path: string; copy: string }[];
};

function citation(names: CaptureName[], edits: string[]): CaptureCitation {
  const copyOf = (name: CaptureName) => {
    const capture: { path: string; lines?: string } = captures[name];
    return `tests/fixtures/llm/captures/vercel-ai/${name}${capture.lines === undefined ? '' : ` (${capture.lines})`}`;
  };
  const [first, ...others] = names;
  if (first === undefined) throw new Error('a citation names at least one capture');
  return {
    repository: upstream.repository,
    path: captures[first].path,
    commit: upstream.commit,
    copy: copyOf(first),
    edited: edits.length === 0 ? 'nothing' : edits.join('; '),
    ...(others.length === 0
      ? {}
      : { also_from: others.map((name) => ({ path: captures[name].path, copy: copyOf(name) })) }),
  };
}

/**
 * `text` in at most `count` pieces, cut at word boundaries and spread evenly, as the provider's frames carried its
 * own text; fewer pieces when the text has fewer words. Always at least one piece.
 */
function splitInto(text: string, count: number): string[] {
  const words = text.match(/\s*\S+\s*/g) ?? [text];
  const pieces = Math.max(1, Math.min(count, words.length));
  const result: string[] = [];
  let start = 0;
  for (let index = 0; index < pieces; index += 1) {
    const size = Math.floor(words.length / pieces) + (index < words.length % pieces ? 1 : 0);
    result.push(words.slice(start, start + size).join(''));
    start += size;
  }
  return result;
}

/** JSON text in at most `count` pieces, cut anywhere (providers cut argument JSON mid-token). */
function splitJson(text: string, count: number): string[] {
  const pieces = Math.max(1, Math.min(count, text.length));
  const size = Math.ceil(text.length / pieces);
  const result: string[] = [];
  for (let start = 0; start < text.length; start += size) result.push(text.slice(start, start + size));
  while (result.length < pieces) result.push('');
  return result;
}

/**
 * Replaces the content of the frames that `select` picks, in order, by `pieces`; frames left over are dropped, so the
 * stream has as many delta frames as the new content has pieces. Returns the kept frames.
 */
function replaceDeltas(
  frames: Frame[],
  select: (frame: Frame) => boolean,
  content: string,
  split: (text: string, count: number) => string[],
  write: (frame: Frame, piece: string) => void,
): { frames: Frame[]; before: number; after: number } {
  const picked = frames.filter(select);
  const pieces = split(content, picked.length);
  let next = 0;
  const kept: Frame[] = [];
  for (const frame of frames) {
    if (!select(frame)) {
      kept.push(frame);
      continue;
    }
    const piece = pieces[next];
    next += 1;
    if (piece === undefined) continue;
    write(frame, piece);
    kept.push(frame);
  }
  return { frames: kept, before: picked.length, after: Math.min(picked.length, pieces.length) };
}

function deltaCount(before: number, after: number): string {
  const frames = `${before} ${before === 1 ? 'frame' : 'frames'}`;
  return before === after ? frames : `${frames}, ${before - after} of them dropped`;
}

// ------------------------------------------------------------------------------------------------ Anthropic

/** What an Anthropic answer says, block by block, in the order of the capture's blocks. */
export interface AnthropicContent {
  /** Replaces the text of the capture's text blocks (all of them, as one text). */
  text?: string;
  /** Replaces the thinking text; the signature stays the capture's. */
  thinking?: string;
  /** Replaces the capture's tool_use block: its name and its input; the id stays, unless `id` is given. */
  toolUse?: { name: string; input: unknown; id?: string };
  /** Put the thinking block of this capture before the capture's own blocks (which are renumbered). */
  thinkingFrom?: CaptureName;
}

export function anthropicStream(name: CaptureName, content: AnthropicContent): AdaptedExchange {
  let frames = structuredClone(readCapture(name));
  const edits: string[] = [];
  const names: CaptureName[] = [name];
  if (content.thinkingFrom !== undefined) {
    const donor = readCapture(content.thinkingFrom);
    const block = donor.filter((frame) => frame.index === 0 && String(frame.type).startsWith('content_block'));
    const insertAt = frames.findIndex((frame) => frame.type === 'content_block_start');
    for (const frame of frames) if (typeof frame.index === 'number') frame.index += 1;
    frames.splice(insertAt, 0, ...structuredClone(block));
    names.push(content.thinkingFrom);
    edits.push(
      `the thinking block (content_block_start, its thinking_delta and signature_delta frames, content_block_stop) of ${content.thinkingFrom} inserted before the capture's blocks, whose indexes shift by one`,
    );
  }
  const deltaOf = (frame: Frame) => (frame.type === 'content_block_delta' ? (frame.delta as Frame) : undefined);
  if (content.text !== undefined) {
    const result = replaceDeltas(
      frames,
      (frame) => deltaOf(frame)?.type === 'text_delta',
      content.text,
      splitInto,
      (frame, piece) => {
        (frame.delta as Frame).text = piece;
      },
    );
    frames = result.frames;
    edits.push(`text_delta texts replaced (${deltaCount(result.before, result.after)})`);
  }
  if (content.thinking !== undefined) {
    const result = replaceDeltas(
      frames,
      (frame) => deltaOf(frame)?.type === 'thinking_delta' && (deltaOf(frame)?.thinking as string) !== '',
      content.thinking,
      splitInto,
      (frame, piece) => {
        (frame.delta as Frame).thinking = piece;
      },
    );
    frames = result.frames;
    edits.push(`thinking_delta texts replaced (${deltaCount(result.before, result.after)}); signature kept`);
  }
  if (content.toolUse !== undefined) {
    const { name: toolName, input, id } = content.toolUse;
    const start = frames.find(
      (frame) => frame.type === 'content_block_start' && (frame.content_block as Frame).type === 'tool_use',
    );
    if (start === undefined) throw new Error(`${name} has no tool_use block`);
    const block = start.content_block as Frame;
    edits.push(`tool name ${String(block.name)} → ${toolName}`);
    block.name = toolName;
    if (id !== undefined) {
      edits.push(`tool_use id ${String(block.id)} → ${id} (unique in the conversation)`);
      block.id = id;
    }
    const result = replaceDeltas(
      frames,
      (frame) => frame.index === start.index && deltaOf(frame)?.type === 'input_json_delta',
      JSON.stringify(input),
      splitJson,
      (frame, piece) => {
        (frame.delta as Frame).partial_json = piece;
      },
    );
    frames = result.frames;
    edits.push(`input_json_delta arguments replaced (${deltaCount(result.before, result.after)})`);
  }
  return { reply: { rawEvents: frames }, source: citation(names, edits) };
}

/** A non-streaming Messages body whose first content block becomes `tool_use` `toolName` with `input`, or text. */
export function anthropicBody(
  name: CaptureName,
  content: { toolUse: { name: string; input: unknown } } | { text: string },
): AdaptedExchange {
  const body = structuredClone(readCapture(name)[0] as Frame);
  const blocks = body.content as Frame[];
  const first = blocks[0] as Frame;
  const edits: string[] = [];
  if ('toolUse' in content) {
    edits.push(`tool name ${String(first.name)} → ${content.toolUse.name}`, 'input replaced');
    first.name = content.toolUse.name;
    first.input = content.toolUse.input;
  } else {
    edits.push(`the ${String(first.type)} block replaced by a text block with the answer`);
    blocks[0] = { type: 'text', text: content.text };
    body.stop_reason = 'end_turn';
    edits.push('stop_reason tool_use → end_turn');
  }
  if (blocks.length > 1) edits.push(`${blocks.length - 1} later blocks dropped`);
  body.content = [blocks[0]];
  return { reply: { rawBody: body }, source: citation([name], edits) };
}

// ------------------------------------------------------------------------------------------------ Gemini

export interface GeminiContent {
  /** Replaces the text of the text parts (not thoughts), spread over the frames that carry text. */
  text?: string;
  /** Replaces the capture's function call: name and arguments; its thoughtSignature stays. */
  functionCall?: { name: string; args: unknown };
  /**
   * Adds a thought part (`thought: true`) with this text, in a frame before the capture's first, shaped as the
   * thought frame of `google-stream-no-args-tool-call.chunks.txt` and carrying the capture's own envelope.
   */
  thought?: string;
}

export function geminiStream(name: CaptureName, content: GeminiContent): AdaptedExchange {
  let frames = structuredClone(readCapture(name));
  const edits: string[] = [];
  const names: CaptureName[] = [name];
  const partsOf = (frame: Frame) =>
    (((frame.candidates as Frame[] | undefined)?.[0]?.content as Frame | undefined)?.parts as Frame[] | undefined) ??
    [];
  if (content.text !== undefined) {
    const textFrame = (frame: Frame) =>
      partsOf(frame).some((part) => typeof part.text === 'string' && part.text !== '' && part.thought !== true);
    const result = replaceDeltas(frames, textFrame, content.text, splitInto, (frame, piece) => {
      const part = partsOf(frame).find((candidate) => typeof candidate.text === 'string' && candidate.text !== '');
      if (part !== undefined) part.text = piece;
    });
    frames = result.frames;
    edits.push(`text parts replaced (${deltaCount(result.before, result.after)})`);
  }
  if (content.functionCall !== undefined) {
    const part = frames.flatMap(partsOf).find((candidate) => candidate.functionCall !== undefined);
    if (part === undefined) throw new Error(`${name} has no functionCall part`);
    const call = part.functionCall as Frame;
    edits.push(`function name ${String(call.name)} → ${content.functionCall.name}`, 'args replaced');
    call.name = content.functionCall.name;
    call.args = content.functionCall.args;
  }
  if (content.thought !== undefined) {
    const donorName: CaptureName = 'google-stream-no-args-tool-call.chunks.txt';
    const donor = readCapture(donorName)[0] as Frame;
    const thoughtPart = structuredClone(partsOf(donor)[0] as Frame);
    thoughtPart.text = content.thought;
    const first = structuredClone(frames[0] as Frame);
    const candidate = (first.candidates as Frame[])[0] as Frame;
    candidate.content = { ...(candidate.content as Frame), parts: [thoughtPart] };
    delete candidate.finishReason;
    frames.unshift(first);
    names.push(donorName);
    edits.push(
      `a frame with a thought part (the shape of the first frame of ${donorName}, its text replaced) inserted first, with the capture's envelope (usageMetadata, modelVersion, responseId)`,
    );
  }
  return { reply: { rawEvents: frames }, source: citation(names, edits) };
}

/** A non-streaming generateContent body whose text becomes `text`. */
export function geminiBody(name: CaptureName, text: string): AdaptedExchange {
  const body = structuredClone(readCapture(name)[0] as Frame);
  const parts = (((body.candidates as Frame[])[0] as Frame).content as Frame).parts as Frame[];
  (parts[0] as Frame).text = text;
  return { reply: { rawBody: body }, source: citation([name], ['the text part replaced; thoughtSignature kept']) };
}

// ------------------------------------------------------------------------------------------------ OpenAI

export interface OpenAiContent {
  text?: string;
  reasoning?: string;
  toolCall?: { name: string; arguments: unknown; id?: string };
}

export function openAiStream(name: CaptureName, content: OpenAiContent): AdaptedExchange {
  let frames = structuredClone(readCapture(name));
  const edits: string[] = [];
  const deltaOf = (frame: Frame) => ((frame.choices as Frame[] | undefined)?.[0]?.delta as Frame | undefined) ?? {};
  if (content.text !== undefined) {
    const result = replaceDeltas(
      frames,
      (frame) => typeof deltaOf(frame).content === 'string' && deltaOf(frame).content !== '',
      content.text,
      splitInto,
      (frame, piece) => {
        deltaOf(frame).content = piece;
      },
    );
    frames = result.frames;
    edits.push(`content deltas replaced (${deltaCount(result.before, result.after)})`);
  }
  if (content.reasoning !== undefined) {
    const result = replaceDeltas(
      frames,
      (frame) => typeof deltaOf(frame).reasoning_content === 'string' && deltaOf(frame).reasoning_content !== '',
      content.reasoning,
      splitInto,
      (frame, piece) => {
        deltaOf(frame).reasoning_content = piece;
      },
    );
    frames = result.frames;
    edits.push(`reasoning_content deltas replaced (${deltaCount(result.before, result.after)})`);
  }
  if (content.toolCall !== undefined) {
    const calls = (frame: Frame) => (deltaOf(frame).tool_calls as Frame[] | undefined) ?? [];
    const first = frames.flatMap(calls).find((call) => (call.function as Frame | undefined)?.name !== undefined);
    if (first === undefined) throw new Error(`${name} has no tool call`);
    const fn = first.function as Frame;
    edits.push(`tool name ${String(fn.name)} → ${content.toolCall.name}`);
    fn.name = content.toolCall.name;
    if (content.toolCall.id !== undefined) {
      edits.push(`tool call id ${String(first.id)} → ${content.toolCall.id} (unique in the conversation)`);
      first.id = content.toolCall.id;
    }
    const result = replaceDeltas(
      frames,
      (frame) =>
        calls(frame).some((call) => {
          const argumentsText = (call.function as Frame | undefined)?.arguments;
          return typeof argumentsText === 'string' && argumentsText !== '';
        }),
      JSON.stringify(content.toolCall.arguments),
      splitJson,
      (frame, piece) => {
        const call = calls(frame)[0] as Frame;
        (call.function as Frame).arguments = piece;
      },
    );
    frames = result.frames;
    edits.push(`argument deltas replaced (${deltaCount(result.before, result.after)})`);
  }
  return { reply: { rawEvents: frames }, source: citation([name], edits) };
}

/** A non-streaming chat completion whose message content becomes `text` (and reasoning `reasoning`). */
export function openAiBody(name: CaptureName, content: { text: string; reasoning?: string }): AdaptedExchange {
  const body = structuredClone(readCapture(name)[0] as Frame);
  const message = (body.choices as Frame[])[0]?.message as Frame;
  message.content = content.text;
  const edits = ['message content replaced'];
  if (content.reasoning !== undefined && typeof message.reasoning_content === 'string') {
    message.reasoning_content = content.reasoning;
    edits.push('reasoning_content replaced');
  }
  return { reply: { rawBody: body }, source: citation([name], edits) };
}
