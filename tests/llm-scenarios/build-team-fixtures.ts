import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { readBlackboard, readWorkflowRun, startWorkflowRun } from '@assistant/agents';
import { loadRuntime } from '@assistant/integration-host';
import { createLlmProfiles, createRecordReplayFetch } from '@assistant/llm';
import { FakeAnthropicServer, FakeGeminiServer } from '@assistant/llm/testing';
import { FileNoteStore } from '@assistant/notes';
import { installation, openQueue } from '@assistant/process';
import { runWorker } from '@assistant/worker';
import { pino } from 'pino';
import { eventPerChunkFetch } from './build-fixtures.ts';
import { startRawOpenAiServer } from './raw-openai-server.ts';
import { type ScenarioProvider, scenarioProviders } from './scenario-exchanges.ts';
import {
  readTeamRequest,
  type TeamScenarioName,
  teamExchange,
  teamScenarioNames,
  teamScenarioOf,
  teamWorkflows,
  writeTeamInstallation,
} from './team-scenarios.ts';

const builderApiKey = 'team-scenario-key';

/** What one workflow run of a team scenario ended with. */
export interface TeamRunOutcome {
  scenario: TeamScenarioName;
  status: string;
  output: string | undefined;
  /** Each blackboard entry: who (the persona, before the id) and what. */
  board: { who: string; what: string; id: string }[];
  /** The run note's task list. */
  tasks: number;
}

/**
 * Runs the three team scenarios on `provider` in a fresh installation with a real worker in this process; its
 * models reach the model through `fetch` (the replay suite runs the worker as a process instead). Returns each run's
 * outcome, read from its run note and blackboard.
 */
async function runTeamScenarios(options: {
  provider: ScenarioProvider;
  baseUrl: string;
  fetch: typeof fetch;
}): Promise<TeamRunOutcome[]> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-team-build-'));
  try {
    await writeTeamInstallation({
      dir,
      provider: options.provider,
      baseUrl: options.baseUrl,
      llmCache: { mode: 'live' },
    });
    const { config, registry } = await loadRuntime({
      installation,
      configPath: path.join(dir, 'config.yaml'),
      cwd: dir,
    });
    const queue = await openQueue({ config });
    const runs: { scenario: TeamScenarioName; run: string }[] = [];
    try {
      for (const scenario of teamScenarioNames) {
        const { workflow, input } = teamWorkflows[scenario];
        const started = await startWorkflowRun({
          queue,
          configDir: dir,
          notesRoot: config.paths.notes,
          workflow,
          input,
        });
        runs.push({ scenario, run: started.run });
      }
    } finally {
      await queue.close();
    }
    await runWorker({
      config,
      registry,
      logger: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      exitWhenIdle: true,
      llm: createLlmProfiles({ config, cacheMode: 'live', fetch: options.fetch }),
    });
    const notes = new FileNoteStore({ root: config.paths.notes });
    const outcomes: TeamRunOutcome[] = [];
    for (const { scenario, run } of runs) {
      const note = await readWorkflowRun({ notes, run });
      const board = await readBlackboard({ notes, path: `agents/blackboards/${run}.md` });
      outcomes.push({
        scenario,
        status: String(note?.data.status),
        output: note?.output,
        board: board.map((entry) => ({ who: entry.who.split(' ')[0] ?? entry.who, what: entry.what, id: entry.id })),
        tasks: Array.isArray(note?.data.tasks) ? note.data.tasks.length : 0,
      });
    }
    return outcomes;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Builds the team scenarios' fixtures under `<directory>/<provider>/`: the provider's fake server answers each
 * request with the adapted capture `teamExchange` picks for it (by persona and where its loop is, so concurrent
 * children get their own answers), and the record transport writes each exchange, named after its scenario and
 * citing its capture. Throws when a run does not end as the scenario expects.
 */
export async function buildTeamFixtures(options: {
  directory: string;
  providers?: readonly ScenarioProvider[];
}): Promise<TeamRunOutcome[]> {
  const all: TeamRunOutcome[] = [];
  for (const provider of options.providers ?? (Object.keys(scenarioProviders) as ScenarioProvider[])) {
    let url: string;
    let close: () => Promise<void>;
    if (provider === 'openai-compatible') {
      const server = await startRawOpenAiServer({ respond: (body) => teamExchange(provider, { body }).reply });
      url = server.url;
      close = () => server.close();
    } else {
      const respond = (request: { path: string; body: Record<string, unknown> | undefined }) =>
        teamExchange(provider, { path: request.path, body: request.body ?? {} }).reply;
      const server =
        provider === 'anthropic'
          ? await FakeAnthropicServer.start({ respond })
          : await FakeGeminiServer.start({ respond });
      url = server.url;
      close = () => server.close();
    }
    try {
      // One record transport per request, told the request's own citation and scenario: children ask at once, so
      // a "last exchange served" would cite another child's capture.
      const recording = (async (input: string | URL | Request, init?: RequestInit) => {
        const body = JSON.parse(typeof init?.body === 'string' ? init.body : '{}') as Record<string, unknown>;
        const request = { path: new URL(String(input instanceof Request ? input.url : input)).pathname, body };
        const exchange = teamExchange(provider, request);
        const scenario = teamScenarioOf(readTeamRequest(provider, request).persona) ?? 'workflow-unknown';
        return createRecordReplayFetch({
          mode: 'record',
          directory: options.directory,
          provider,
          apiKey: builderApiKey,
          fetch: eventPerChunkFetch,
          label: scenario,
          source: exchange.source,
        })(input, init);
      }) as typeof fetch;
      const outcomes = await runTeamScenarios({ provider, baseUrl: url, fetch: recording });
      for (const outcome of outcomes) {
        if (outcome.status !== 'done') {
          throw new Error(`Team scenario ${outcome.scenario} on ${provider}: the run ended ${outcome.status}`);
        }
      }
      all.push(...outcomes);
    } finally {
      await close();
    }
  }
  return all;
}
