// A fake OpenAI-compatible `/v1/embeddings` endpoint on loopback for the memory evaluation: it exercises the HTTP
// path of the OpenAI embedder and the index's fusion with vectors that are NOT the hashing embedder's.
//
// Its vectors: words (lower case, letters and digits) are reduced to a crude stem (a few English suffixes cut),
// mapped through a small synonym table (so "dentist" and "dental", "fly" and "flight", "job" and "work" meet, as a
// real embedding model's neighbourhoods would), and each stem is hashed (SHA-1) into one of 512 signed buckets;
// the sum is L2-normalised. Deterministic, offline, and a different function from hashing-v1 (which hashes raw
// unigrams, bigrams and trigrams into 256 buckets), so the figures show the fusion with a second vector space.
// The synonym table was written alongside the eval's queries: the endpoint's figures show what the fusion does
// with vectors that know the vocabulary, an upper bound, not the quality of any real embedding model.
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';

const dimensions = 512;

// Groups of words a real model would put near each other; each word maps to its group's first stem.
const synonymGroups: string[][] = [
  ['dentist', 'dental', 'teeth', 'tooth', 'checkup', 'kowalski', 'brightsmile'],
  ['appointment', 'meeting', 'visit', 'slot', 'call', 'sync'],
  ['flight', 'fly', 'flying', 'plane', 'airline', 'rebook'],
  ['lisbon', 'portugal'],
  ['job', 'work', 'employ', 'employer', 'role', 'position', 'join'],
  ['salary', 'pay', 'compensation', 'money'],
  ['rent', 'flat', 'landlord', 'lease', 'apartment'],
  ['car', 'garage', 'pick', 'brake', 'service'],
  ['leak', 'memory', 'grow'],
  ['release', 'ship', 'launch', 'live', 'come', 'out'],
  ['delay', 'postpone', 'push', 'move', 'late'],
  ['deadline', 'due', 'answer', 'owe'],
  ['party', 'birthday', 'celebrate'],
  ['baby', 'expect', 'pregnant'],
  ['partner', 'sam'],
  ['sister', 'emma'],
  ['tax', 'accountant', 'receipt', 'invoice'],
  ['recruiter', 'recruit', 'talentbridge', 'headhunter'],
  ['design', 'designer', 'figma'],
  ['phone', 'mobile', 'number'],
  ['address', 'home', 'live'],
  ['bank', 'iban', 'account'],
  ['talk', 'speak', 'conference', 'devcon', 'slides'],
  ['offsite', 'retreat'],
  ['quote', 'budget', 'price'],
  ['review', 'look'],
  ['leave', 'away', 'holiday'],
];

const synonyms = new Map<string, string>();
for (const group of synonymGroups) {
  const head = group[0] ?? '';
  for (const word of group) synonyms.set(word, head);
}

const suffixes = ['ing', 'ed', 'es', 's', 'ly', 'er'];

function stem(word: string): string {
  const direct = synonyms.get(word);
  if (direct) return direct;
  for (const suffix of suffixes) {
    if (word.length > suffix.length + 3 && word.endsWith(suffix)) {
      const cut = word.slice(0, -suffix.length);
      return synonyms.get(cut) ?? cut;
    }
  }
  return word;
}

/** The fake's embedding of one text. */
function stemEmbedding(text: string): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    if (word.length < 2) continue;
    const digest = createHash('sha1').update(stem(word)).digest();
    const bucket = digest.readUInt32BE(0) % dimensions;
    vector[bucket] = (vector[bucket] ?? 0) + ((digest[4] ?? 0) & 1 ? 1 : -1);
  }
  const norm = Math.hypot(...vector) || 1;
  return vector.map((value) => value / norm);
}

const requestSchema = z.object({ model: z.string(), input: z.union([z.string(), z.array(z.string())]) });

export interface FakeEmbeddingsServer extends AsyncDisposable {
  /** The base URL an OpenAI client takes, `http://127.0.0.1:<port>/v1`. */
  url: string;
  /** Embedding requests served. */
  requests: number;
  close(): Promise<void>;
}

/** Starts the fake on a free loopback port. */
export async function startFakeEmbeddingsServer(): Promise<FakeEmbeddingsServer> {
  let requests = 0;
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/embeddings') {
        response.writeHead(404, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: { message: `No route ${request.method} ${request.url}` } }));
        return;
      }
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = undefined;
      }
      const parsed = requestSchema.safeParse(body);
      if (!parsed.success) {
        response.writeHead(400, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: { message: 'Expected {model, input: string | string[]}' } }));
        return;
      }
      requests += 1;
      const inputs = typeof parsed.data.input === 'string' ? [parsed.data.input] : parsed.data.input;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          object: 'list',
          model: parsed.data.model,
          data: inputs.map((input, index) => ({ object: 'embedding', index, embedding: stemEmbedding(input) })),
          usage: { prompt_tokens: 0, total_tokens: 0 },
        }),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
    return closed;
  };
  return {
    url: `http://127.0.0.1:${port}/v1`,
    get requests() {
      return requests;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
