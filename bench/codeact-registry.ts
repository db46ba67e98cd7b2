// The code-mode tool registry (packages/codeact/src/tool-registry.ts, decision 0065): what the code prompt's tool
// declarations cost next to the JSON tool specs JSON mode sends, and how long a tool search takes. The tools are real:
// chat's tools (note tools included), the memory tools and the sub-agent tools are built from their definitions here
// (their stores are stand-ins the bench never calls: it reads specs only); the MCP tools are the snapshot
// bench/fixtures/codeact-mcp-tools.json of what server-everything and server-filesystem offer through Assistant's
// MCP pool (`node bench/codeact-registry-fixtures.ts` writes it). Prints:
// - tools, the declaration block's characters and ~tokens (characters / 4), the JSON specs' characters and ~tokens,
//   for all the tools and for the in-repo and MCP tools apart;
// - the same for a discovery prompt that declares only what one search found;
// - search p50/p95 over all the tools, for a set of queries.
// `npm run bench:codeact-registry [-- --searches 2000 --json --print]` (`--print` shows the whole declaration block). It prints figures; it never fails for being slow.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { agentTools } from '@assistant/agents';
import { createToolRegistry, type RegistryEntry } from '@assistant/codeact';
import { memoryTools } from '@assistant/integration-host';
import * as z from 'zod';
import { chatTools } from '../integrations/chat/src/chat-tools.ts';

const { values } = parseArgs({
  options: {
    searches: { type: 'string', default: '2000' },
    json: { type: 'boolean', default: false },
    print: { type: 'boolean', default: false },
  },
});
const searchCount = Number(values.searches);

/**
 * Stands in for the stores, consoles and contexts the tools use when they run. The bench only reads the tools'
 * specs, so nothing may call it: any call throws.
 */
function neverCalled<T>(): T {
  const target = () => {
    throw new Error('bench:codeact-registry ran a tool; it only reads their specs');
  };
  const proxy: unknown = new Proxy(target, { get: () => proxy });
  return proxy as T;
}

const inRepo = [
  ...chatTools({
    context: neverCalled(),
    conversationId: 'bench',
    ownerPeer: true,
    ownerTexts: () => [],
    showApproval: async () => {},
  }),
  ...memoryTools({ memory: neverCalled(), owner: true, source: 'bench' }),
  ...agentTools({ subagents: neverCalled(), state: neverCalled(), child: true }),
].map(
  (tool): RegistryEntry => ({
    name: tool.name,
    description: tool.description,
    parameters: tool.spec.parameters,
    tier: tool.tier,
  }),
);

const snapshotSchema = z.array(
  z.object({
    name: z.string(),
    description: z.string(),
    tier: z.enum(['read_only', 'soft', 'irreversible']),
    parameters: z.record(z.string(), z.unknown()),
  }),
);
const snapshotFile = path.join(import.meta.dirname, 'fixtures/codeact-mcp-tools.json');
const mcp = snapshotSchema.parse(JSON.parse(await readFile(snapshotFile, 'utf8')));

const registry = createToolRegistry([...inRepo, ...mcp]);
const tokens = (chars: number) => Math.round(chars / 4);
/**
 * The declaration block's characters, and what JSON mode sends for the same tools: each spec as a chat API's
 * `tools` entry, JSON without spaces.
 */
function sizes(entries: readonly RegistryEntry[]): { declarationChars: number; specChars: number } {
  const part = createToolRegistry(entries);
  return {
    declarationChars: part.declarations().length,
    specChars: JSON.stringify(part.specs().map((spec) => ({ type: 'function', function: spec }))).length,
  };
}
const { declarationChars, specChars } = sizes([...inRepo, ...mcp]);
const inRepoSizes = sizes(inRepo);
const mcpSizes = sizes(mcp);

const queries = [
  'search notes',
  'read a file',
  'remember a fact',
  'list_directory',
  'spawn agent',
  'approve',
  'files.write_file',
  'echo message',
  'who is alice',
  'tasks due this week',
];
const found = registry.search('read file');
const discoveryChars = registry.declarations(found.map((tool) => tool.name)).length;

for (const query of queries) registry.search(query); // warm up
const searchMs: number[] = [];
for (let index = 0; index < searchCount; index++) {
  const query = queries[index % queries.length] ?? '';
  const started = performance.now();
  registry.search(query);
  searchMs.push(performance.now() - started);
}
function percentile(samples: number[], fraction: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN;
}
const round = (value: number, digits = 3) => Math.round(value * 10 ** digits) / 10 ** digits;

const figures = {
  tools: registry.tools.length,
  inRepoTools: inRepo.length,
  mcpTools: mcp.length,
  declarations: { chars: declarationChars, tokens: tokens(declarationChars) },
  jsonSpecs: { chars: specChars, tokens: tokens(specChars) },
  declarationsVsSpecs: round(declarationChars / specChars, 2),
  inRepoOnly: { ...inRepoSizes, ratio: round(inRepoSizes.declarationChars / inRepoSizes.specChars, 2) },
  mcpOnly: { ...mcpSizes, ratio: round(mcpSizes.declarationChars / mcpSizes.specChars, 2) },
  discovery: {
    query: 'read file',
    found: found.map((tool) => tool.path.join('.')),
    chars: discoveryChars,
    tokens: tokens(discoveryChars),
  },
  searchMs: { searches: searchCount, p50: round(percentile(searchMs, 0.5)), p95: round(percentile(searchMs, 0.95)) },
};

if (values.print) console.log(`${registry.declarations()}\n`);
if (values.json) console.log(JSON.stringify(figures, null, 2));
else {
  console.log(`tools: ${figures.tools} (${figures.inRepoTools} in the repo, ${figures.mcpTools} from two MCP servers)`);
  console.log(
    `declaration block: ${declarationChars} chars (~${tokens(declarationChars)} tokens); JSON specs: ${specChars} chars (~${tokens(specChars)} tokens); ratio ${figures.declarationsVsSpecs}`,
  );
  for (const [label, part] of [
    ['in-repo tools only', figures.inRepoOnly],
    ['MCP tools only', figures.mcpOnly],
  ] as const) {
    console.log(
      `  ${label}: declarations ${part.declarationChars} chars, JSON specs ${part.specChars} chars; ratio ${part.ratio}`,
    );
  }
  console.log(
    `discovery ("read file" → ${found.length} tools: ${figures.discovery.found.join(', ')}): ${discoveryChars} chars (~${tokens(discoveryChars)} tokens)`,
  );
  console.log(`search over ${figures.tools} tools: p50 ${figures.searchMs.p50} ms, p95 ${figures.searchMs.p95} ms`);
}
