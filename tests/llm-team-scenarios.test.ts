// The three workflow topologies on recorded provider answers: an installation whose default profile is Anthropic,
// Gemini or an OpenAI-compatible model, with `llm_cache: replay` over tests/fixtures/llm, runs `assistant run` for a
// pipeline, a star and a mesh, and a real worker process (`assistant work`) runs every runner and agent task. Nothing
// reaches a network: the profile's base URL is unreachable, and a request without a recording fails its task with
// LLM_REPLAY_MISS. The fixtures are built from real provider captures (tests/fixtures/llm/README.md).

import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { readBlackboard, readWorkflowRun } from '@assistant/agents';
import { FileNoteStore } from '@assistant/notes';
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { type ScenarioProvider, scenarioProviders } from './llm-scenarios/scenario-exchanges.ts';
import {
  type TeamScenarioName,
  teamAnswers,
  teamScenarioNames,
  teamWorkflows,
  writeTeamInstallation,
} from './llm-scenarios/team-scenarios.ts';

const fixtures = path.join(import.meta.dirname, 'fixtures', 'llm');
const providers = Object.keys(scenarioProviders) as ScenarioProvider[];

describe.concurrent('the workflow topologies on recorded provider answers (llm_cache: replay)', () => {
  for (const provider of providers) {
    it(`runs a pipeline, a star and a mesh on ${provider}`, { timeout: 120_000 }, async (context) => {
      // An owner who re-recorded a provider with keys (`npm run fixtures:record`) has no team fixtures for it: that
      // command records the scenarios of scenarios.ts only.
      const files = await readdir(path.join(fixtures, provider)).catch(() => [] as string[]);
      if (!files.some((name) => name.startsWith('workflow-'))) {
        context.skip(
          `tests/fixtures/llm/${provider}/ has no workflow-* fixtures (npm run fixtures:build -- --scenario team)`,
        );
      }
      await using dir = await tempDir();
      await writeTeamInstallation({
        dir: dir.path,
        provider,
        // Port 9 (discard) on loopback: nothing listens, and replay never sends anything anyway.
        baseUrl: 'http://127.0.0.1:9/v1',
        llmCache: { mode: 'replay', directory: fixtures },
      });
      const cli = (args: readonly string[]) => runCli(args, { cwd: dir.path });
      const checked = await cli(['config', 'check']);
      expect(checked.code, checked.stderr).toBe(0);

      const runs = new Map<TeamScenarioName, string>();
      for (const scenario of teamScenarioNames) {
        const { workflow, input } = teamWorkflows[scenario];
        const started = await cli(['run', workflow, '--input', input]);
        expect(started.code, started.stderr).toBe(0);
        const run = /run (run-\d{8}-[a-z0-9]+)/.exec(started.stdout)?.[1];
        expect(run, started.stdout).toBeDefined();
        runs.set(scenario, run ?? '');
      }
      const worked = await cli(['work', '--exit-when-idle']);
      expect(worked.code, worked.stderr).toBe(0);

      const notes = new FileNoteStore({ root: path.join(dir.path, 'data', 'notes') });
      const outcome = async (scenario: TeamScenarioName) => {
        const run = runs.get(scenario) ?? '';
        const note = await readWorkflowRun({ notes, run });
        const board = await readBlackboard({ notes, path: `agents/blackboards/${run}.md` });
        // A failed run names its cause (an LLM_REPLAY_MISS names the request's key and the closest fixture).
        expect(note?.data.status, `${scenario}: ${note?.output ?? JSON.stringify(note?.data)}`).toBe('done');
        expect(new Set(board.map((entry) => entry.id)).size, 'each entry once').toBe(board.length);
        return { note, board, who: board.map((entry) => entry.who.split(' ')[0]) };
      };

      // Pipeline: the researcher read the note (read_note on the provider's tool-call frames), the writer got its
      // fact fenced as {{previous}}.
      const pipeline = await outcome('workflow-pipeline');
      expect(pipeline.note?.output).toBe(teamAnswers.sentence);
      expect(pipeline.board.map((entry) => entry.what)).toEqual(['Lisbon', teamAnswers.fact, teamAnswers.sentence]);
      expect(pipeline.who).toEqual(['workflow', 'researcher', 'writer']);

      // Star: two workers at once, their results waited for, and the fact-finder's answer forwarded word for word:
      // the recorded forward named the child the recording spawned, the replay named this run's.
      const star = await outcome('workflow-star');
      expect(star.note?.output).toBe(teamAnswers.factFinder);
      expect(star.board[0]?.what).toBe('Lisbon');
      // The workers finish in either order; the supervisor's entry comes last.
      expect(
        star.board
          .slice(1, 3)
          .map((entry) => entry.what)
          .sort(),
      ).toEqual([teamAnswers.factFinder, teamAnswers.summary].sort());
      expect(star.board[3]).toMatchObject({ what: teamAnswers.factFinder });
      expect(star.who[3]).toBe('manager');
      // The runner, the supervisor and its two workers.
      expect(star.note?.data.tasks).toHaveLength(4);

      // Mesh: turns on the blackboard until the critic agreed in round 2; each turn saw the board so far.
      const mesh = await outcome('workflow-mesh');
      expect(mesh.note?.output).toBe(teamAnswers.critic2);
      expect(mesh.board.map((entry) => entry.what)).toEqual([
        'a weekend in Lisbon',
        teamAnswers.optimist(1),
        teamAnswers.critic1,
        teamAnswers.optimist(2),
        teamAnswers.critic2,
      ]);
    });
  }
});
