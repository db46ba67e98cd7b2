// `npm run fixtures:build [-- --provider anthropic] [--scenario email-classify|team]`: rebuilds the scenario fixtures
// under tests/fixtures/llm/<provider>/ from the real captures in tests/fixtures/llm/captures/, offline. Each
// capture, adapted to the scenario, is served by the provider's local fake server; the scenario runs through the real
// adapter and the record/replay transport in record mode writes the fixtures (tests/fixtures/llm/README.md).

import { rm } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { buildScenarioFixtures } from '../tests/llm-scenarios/build-fixtures.ts';
import { buildTeamFixtures } from '../tests/llm-scenarios/build-team-fixtures.ts';
import { type ScenarioProvider, scenarioProviders } from '../tests/llm-scenarios/scenario-exchanges.ts';
import { type ScenarioName, scenarioNames } from '../tests/llm-scenarios/scenarios.ts';

const root = path.resolve(import.meta.dirname, '..');
const directory = path.join(root, 'tests', 'fixtures', 'llm');
const { values } = parseArgs({
  options: {
    provider: { type: 'string', multiple: true },
    scenario: { type: 'string', multiple: true },
    // Keep the provider directories' other files (recordings made with real keys) instead of starting afresh.
    keep: { type: 'boolean', default: false },
  },
});

const knownProviders = Object.keys(scenarioProviders) as ScenarioProvider[];
const providers = (values.provider ?? knownProviders).map((name) => {
  const provider = knownProviders.find((known) => known === name);
  if (provider === undefined) {
    throw new Error(`Unknown --provider ${JSON.stringify(name)}; expected one of ${knownProviders.join(', ')}`);
  }
  return provider;
});
const knownScenarios: readonly string[] = [...scenarioNames, 'team'];
const scenarios = (values.scenario ?? knownScenarios).map((name) => {
  const scenario = knownScenarios.find((known) => known === name);
  if (scenario === undefined) {
    throw new Error(`Unknown --scenario ${JSON.stringify(name)}; expected one of ${knownScenarios.join(', ')}`);
  }
  return scenario;
});

// A full rebuild starts from empty directories, so a fixture no scenario asks for any more does not linger.
if (!values.keep && values.provider === undefined && values.scenario === undefined) {
  for (const provider of knownProviders) await rm(path.join(directory, provider), { recursive: true, force: true });
}
await buildScenarioFixtures({
  directory,
  providers,
  scenarios: scenarios.filter((name): name is ScenarioName => name !== 'team'),
  onScenario: (provider, outcome) => {
    console.log(`${provider} ${outcome.name}: ${outcome.calls.length} calls, ${outcome.ok ? 'ok' : 'FAILED'}`);
  },
});
// The agent-team scenarios (`--scenario team`): a real worker runs the three workflow topologies.
if (scenarios.includes('team')) {
  for (const outcome of await buildTeamFixtures({ directory, providers })) {
    console.log(`team ${outcome.scenario}: ${outcome.status}, ${outcome.board.length} blackboard entries`);
  }
}
console.log(`Fixtures written under ${path.relative(root, directory)}/<provider>/`);
