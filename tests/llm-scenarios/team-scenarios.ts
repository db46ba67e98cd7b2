import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  type AdaptedExchange,
  anthropicBody,
  anthropicStream,
  geminiBody,
  geminiStream,
  openAiBody,
  openAiStream,
} from './adapt-captures.ts';
import type { ScenarioProvider } from './scenario-exchanges.ts';
import { scenarioProviders } from './scenario-exchanges.ts';

/**
 * The agent-team scenarios: the three workflow topologies run by a real worker (`system.workflow` and every agent a
 * `system.agent` task, personas from files, sub-agent tools, results through the inbox, the blackboard), with the
 * model answering from recorded provider exchanges. Unlike the scenarios of scenarios.ts, which drive one loop
 * in-process, these run the whole installation, so what a provider's real frames do to spawn_agent, wait_agents,
 * reply_to_caller's forward, a persona's refusal and a fenced blackboard is what the suite replays.
 *
 * - `workflow-pipeline` (`brief`): the researcher reads a note with read_note and answers a fact; the writer gets it
 *   fenced as `{{previous}}` and answers a sentence.
 * - `workflow-star` (`team`): the manager spawns the fact-finder and the summarizer (two calls; the summarizer with
 *   `context: fork`, so it sees the manager's conversation), waits for both,
 *   and forwards the fact-finder's answer word for word (`reply_to_caller {forward: <its id>}`: the id the replay
 *   puts in is the one this run minted). The summarizer first calls `wait`, which its persona allows but its
 *   parent does not delegate: PERSONA_TOOL_DENIED reaches it as a tool result, and it answers anyway.
 * - `workflow-mesh` (`debate`): the optimist and the critic take turns on the blackboard until the critic writes
 *   AGREED in round 2; each sees the fenced board, entries and times included.
 */
export const teamScenarioNames = ['workflow-pipeline', 'workflow-star', 'workflow-mesh'] as const;
export type TeamScenarioName = (typeof teamScenarioNames)[number];

/** Each scenario's workflow, and the input its run is started with. */
export const teamWorkflows: Record<TeamScenarioName, { workflow: string; input: string }> = {
  'workflow-pipeline': { workflow: 'brief', input: 'Lisbon' },
  'workflow-star': { workflow: 'team', input: 'Lisbon' },
  'workflow-mesh': { workflow: 'debate', input: 'a weekend in Lisbon' },
};

/** What each answer says: the built fixtures answer exactly this, so the suite can compare outputs and blackboards. */
export const teamAnswers = {
  fact: 'FACT: Lisbon is built on seven hills, and tram 28 has climbed them since 1914.',
  sentence: 'Lisbon, the city of seven hills, gives a walker a view at every turn.',
  factFinder: 'FACT: the Santa Justa lift has carried people up from the Baixa since 1902.',
  summary: 'Lisbon is worth a visit for its light, its hills and its food.',
  optimist: (round: number) => `optimist, round ${round}: a weekend is enough for the hills and the river.`,
  critic1: 'critic, round 1: the hills are steep; plan the trams.',
  critic2: 'critic, round 2: with tram 28 planned, fair enough. AGREED',
} as const;

/** The note the researcher reads. */
const lisbonNote = {
  path: 'facts/lisbon.md',
  text: '---\ntopic: Lisbon\n---\n\nLisbon is built on seven hills. Tram 28 has climbed them since 1914.\n',
};

const personas: Record<string, { frontmatter: string; instructions: string }> = {
  researcher: { frontmatter: 'tools: {allow: [read_note]}', instructions: 'You are the researcher. Find facts.' },
  writer: { frontmatter: 'tools: {allow: [read_note]}', instructions: 'You are the writer. Write one sentence.' },
  manager: {
    frontmatter: 'tools: {allow: [spawn_agent, wait_agents, read_note]}\ndelegable: [read_note]',
    instructions: 'You are the manager. Split the work between your workers.',
  },
  'fact-finder': { frontmatter: 'tools: {allow: [read_note]}', instructions: 'You are the fact-finder. One fact.' },
  summarizer: {
    frontmatter: 'tools: {allow: ["*"]}',
    instructions: 'You are the summarizer. Take a moment to think, then answer.',
  },
  optimist: { frontmatter: 'tools: {allow: [read_note]}', instructions: 'You are the optimist. Be brief.' },
  critic: { frontmatter: 'tools: {allow: [read_note]}', instructions: 'You are the critic. Be brief.' },
};

const workflows: Record<string, string> = {
  brief: `topology: pipeline
description: a fact, then a sentence
steps:
  - persona: researcher
    task: "Find one fact about {{input}} in the note ${lisbonNote.path}."
  - persona: writer
    task: "Write one sentence for the owner from this fact: {{previous}}"
`,
  team: `topology: star
supervisor: manager
workers: [fact-finder, summarizer]
task: "Tell the owner one fact about {{input}}."
`,
  debate: `topology: mesh
agents: [optimist, critic]
task: "Discuss {{input}}."
max_rounds: 3
stop_when: AGREED
`,
};

/**
 * Writes an installation that runs the team scenarios on `provider`: config.yaml (its default profile that
 * provider, `llm_cache` as given), the personas, the workflows and the note the researcher reads.
 */
export async function writeTeamInstallation(options: {
  dir: string;
  provider: ScenarioProvider;
  /** Where the model is: the fake server while building; never reached in replay. */
  baseUrl: string;
  llmCache: { mode: 'replay' | 'live'; directory?: string };
}): Promise<void> {
  const { dir, provider } = options;
  const cache =
    options.llmCache.directory === undefined
      ? `llm_cache: {mode: ${options.llmCache.mode}}`
      : `llm_cache: {mode: ${options.llmCache.mode}, directory: ${JSON.stringify(options.llmCache.directory)}}`;
  await writeFile(
    path.join(dir, 'config.yaml'),
    `data_dir: ./data
owner: {timezone: Europe/Lisbon}
llms:
  default:
    provider: ${provider}
    model: ${scenarioProviders[provider].model}
    base_url: ${JSON.stringify(options.baseUrl)}
    api_key: team-scenario-key
worker: {concurrency: 3, poll_interval: 50ms, shutdown_grace: 2s}
${cache}
`,
  );
  await mkdir(path.join(dir, 'personas'), { recursive: true });
  for (const [name, persona] of Object.entries(personas)) {
    await writeFile(
      path.join(dir, 'personas', `${name}.md`),
      `---\n${persona.frontmatter}\n---\n\n${persona.instructions}\n`,
    );
  }
  await mkdir(path.join(dir, 'agents'), { recursive: true });
  for (const [name, text] of Object.entries(workflows)) await writeFile(path.join(dir, 'agents', `${name}.yaml`), text);
  const notePath = path.join(dir, 'data', 'notes', lisbonNote.path);
  await mkdir(path.dirname(notePath), { recursive: true });
  await writeFile(notePath, lisbonNote.text);
}

// ------------------------------------------------------------------------------------------------ the model

/** A model request as the team's model reads it, whatever the wire format. */
export interface TeamRequest {
  /** The persona whose loop asks (its instructions start `You are the <name>.`). */
  persona: string | undefined;
  /** The loop's first user message: its task. */
  task: string;
  /** Every tool result so far, in order, as text. */
  toolResults: string[];
  streaming: boolean;
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map(textOf).join('\n');
  if (typeof content === 'object' && content !== null) {
    const part = content as Record<string, unknown>;
    if (typeof part.text === 'string') return part.text;
    if (part.parts !== undefined) return textOf(part.parts);
  }
  return '';
}

/** Reads a request of any of the three wire formats (`path` tells Gemini's streaming apart). */
export function readTeamRequest(
  provider: ScenarioProvider,
  request: { path?: string; body: Record<string, unknown> },
): TeamRequest {
  const body = request.body;
  let system = '';
  let task = '';
  const toolResults: string[] = [];
  if (provider === 'openai-compatible') {
    for (const message of (body.messages as Record<string, unknown>[]) ?? []) {
      if (message.role === 'system') system += textOf(message.content);
      else if (message.role === 'user' && task === '') task = textOf(message.content);
      else if (message.role === 'tool') toolResults.push(textOf(message.content));
    }
  } else if (provider === 'anthropic') {
    system = textOf(body.system);
    for (const message of (body.messages as Record<string, unknown>[]) ?? []) {
      if (message.role !== 'user') continue;
      const parts = Array.isArray(message.content) ? (message.content as Record<string, unknown>[]) : [];
      for (const part of parts) if (part.type === 'tool_result') toolResults.push(textOf(part.content));
      if (task === '') task = textOf(parts.filter((part) => part.type === 'text')) || textOf(message.content);
    }
  } else {
    system = textOf(body.systemInstruction);
    for (const content of (body.contents as Record<string, unknown>[]) ?? []) {
      if (content.role !== 'user') continue;
      const parts = (content.parts as Record<string, unknown>[]) ?? [];
      for (const part of parts) if (part.functionResponse !== undefined) toolResults.push(JSON.stringify(part));
      const text = parts.filter((part) => typeof part.text === 'string');
      if (task === '' && text.length > 0) task = textOf(text);
    }
  }
  const streaming =
    provider === 'google' ? (request.path ?? '').includes('streamGenerateContent') : body.stream === true;
  return { persona: /You are the ([\w-]+)\./.exec(system)?.[1], task, toolResults, streaming };
}

/** What the model says next: a tool call or an answer. */
type TeamTurn = { tool: { name: string; input: Record<string, unknown>; id: string } } | { text: string };

/** The scripted team: what each persona answers, given where its loop is. */
function teamTurn(request: TeamRequest): TeamTurn {
  const results = request.toolResults;
  switch (request.persona) {
    case 'researcher':
      return results.length === 0
        ? { tool: { name: 'read_note', input: { path: lisbonNote.path }, id: 'toolu_01TeamResearcherReadNote' } }
        : { text: results[0]?.includes('seven hills') ? teamAnswers.fact : 'FACT: none found' };
    case 'writer':
      return { text: request.task.includes('seven hills') ? teamAnswers.sentence : 'No fact was given.' };
    case 'manager': {
      const spawned = /ag-[0-9a-f]{16}/.exec(results[0] ?? '')?.[0] ?? 'ag-none';
      if (results.length === 0) {
        return {
          tool: {
            name: 'spawn_agent',
            input: { persona: 'fact-finder', task: 'Find one fact about Lisbon.' },
            id: 'toolu_01TeamManagerSpawnFacts',
          },
        };
      }
      if (results.length === 1) {
        return {
          tool: {
            name: 'spawn_agent',
            // Forked: the summarizer also sees the manager's conversation so far, fenced, the spawn result included.
            input: { persona: 'summarizer', task: 'Say in one sentence why Lisbon is worth a visit.', context: 'fork' },
            id: 'toolu_01TeamManagerSpawnSummary',
          },
        };
      }
      if (results.length === 2) return { tool: { name: 'wait_agents', input: {}, id: 'toolu_01TeamManagerWait' } };
      return { tool: { name: 'reply_to_caller', input: { forward: spawned }, id: 'toolu_01TeamManagerForward' } };
    }
    case 'fact-finder':
      return { text: teamAnswers.factFinder };
    case 'summarizer':
      if (!request.task.includes('What your caller gave you of its work so far')) return { text: 'no fork given' };
      return results.length === 0
        ? {
            tool: { name: 'wait', input: { ms: 1 }, id: 'toolu_01TeamSummarizerWait' },
          }
        : { text: teamAnswers.summary };
    case 'optimist':
      return { text: teamAnswers.optimist(Number(/Round (\d+)/.exec(request.task)?.[1] ?? 0)) };
    case 'critic':
      return {
        text:
          /Round 2/.test(request.task) && request.task.includes('optimist, round 2')
            ? teamAnswers.critic2
            : teamAnswers.critic1,
      };
    default:
      return { text: `no script for ${request.persona}` };
  }
}

/** The OpenAI-format id of a tool call: the Anthropic-style ids above, renamed. */
const openAiId = (id: string) => `call_${id.replace(/^toolu_01/, '')}`;

/** The answer to `request` on `provider`, built from the real captures (adapt-captures.ts), frame by frame. */
export function teamExchange(
  provider: ScenarioProvider,
  request: { path?: string; body: Record<string, unknown> },
): AdaptedExchange {
  const read = readTeamRequest(provider, request);
  const turn = teamTurn(read);
  if (provider === 'anthropic') {
    if ('text' in turn) {
      return read.streaming
        ? anthropicStream('anthropic-text.chunks.txt', { text: turn.text })
        : anthropicBody('anthropic-json-tool.1.json', { text: turn.text });
    }
    return read.streaming
      ? anthropicStream('anthropic-tool-no-args.chunks.txt', {
          text: `Calling ${turn.tool.name}.`,
          toolUse: { name: turn.tool.name, input: turn.tool.input, id: turn.tool.id },
        })
      : anthropicBody('anthropic-json-tool.1.json', { toolUse: { name: turn.tool.name, input: turn.tool.input } });
  }
  if (provider === 'google') {
    if ('text' in turn) {
      return read.streaming
        ? geminiStream('google-text.chunks.txt', { text: turn.text })
        : geminiBody('google-text.json', turn.text);
    }
    if (!read.streaming) throw new Error('the team scenarios expect streamed tool calls on google');
    return geminiStream('google-tool-call.chunks.txt', {
      functionCall: { name: turn.tool.name, args: turn.tool.input },
    });
  }
  if ('text' in turn) {
    return read.streaming
      ? openAiStream('deepseek-reasoning.chunks.excerpt.txt', { reasoning: `As the ${read.persona}.`, text: turn.text })
      : openAiBody('deepseek-json.json', { text: turn.text });
  }
  return openAiStream('deepseek-tool-call.chunks.txt', {
    reasoning: `As the ${read.persona}, I call ${turn.tool.name}.`,
    toolCall: { name: turn.tool.name, arguments: turn.tool.input, id: openAiId(turn.tool.id) },
  });
}

/** The scenario a request belongs to, by its persona: the fixture files are named after it. */
export function teamScenarioOf(persona: string | undefined): TeamScenarioName | undefined {
  if (persona === 'researcher' || persona === 'writer') return 'workflow-pipeline';
  if (persona === 'manager' || persona === 'fact-finder' || persona === 'summarizer') return 'workflow-star';
  if (persona === 'optimist' || persona === 'critic') return 'workflow-mesh';
  return undefined;
}
