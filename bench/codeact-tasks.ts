// Code as action against JSON tool calling, on ten owner tasks over checked-in fixtures (bench/codeact-tasks/):
// triage an inbox, summarise PRs, draft replies, a customer digest, … Each task runs through the real agent loop,
// sandbox executor and call log three ways: JSON tools, run_code alongside the JSON tools (`code_mode: alongside`)
// and run_code with search_tools only (`code_mode: discovery`). The model is a scripted policy per mode that solves
// the task the best way its protocol allows (parallel JSON calls where independent; one cell in code), so the
// figures are what the protocol costs for the same plan, not what a real model would do. It prints per task and in
// total the model round trips, estimated input and output tokens and tool calls, and the reduction against JSON
// (issue 36's goal: at least 30 % fewer round trips and input tokens). It exits non-zero when any mode's outcome
// (the fixture world after the task, and the answer) differs from JSON mode's: a reduction that changes the result
// is not one. `npm run bench:codeact-tasks [-- --json]`.

import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isDeepStrictEqual, parseArgs } from 'node:util';
import { createExecutor } from '@assistant/codeact';
import { machineLine } from './bench-processes.ts';
import { type Mode, modes, runTask, type TaskCost } from './codeact-tasks/run-task.ts';
import { ownerTasks } from './codeact-tasks/tasks.ts';

const { values } = parseArgs({ options: { json: { type: 'boolean', default: false } } });

const directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-bench-codeact-tasks-'));
const executor = createExecutor({ timeoutMs: 30_000 });
const metrics = ['roundTrips', 'inputTokens', 'outputTokens', 'toolCalls'] as const;
const zero = (): TaskCost => ({ roundTrips: 0, inputTokens: 0, outputTokens: 0, toolCalls: 0 });
const totals = Object.fromEntries(modes.map((mode) => [mode, zero()])) as Record<Mode, TaskCost>;
const rows: { task: string; costs: Record<Mode, TaskCost> }[] = [];
const mismatches: string[] = [];

try {
  await executor.warm();
  for (const task of ownerTasks) {
    const costs = {} as Record<Mode, TaskCost>;
    let reference: unknown;
    for (const mode of modes) {
      const run = await runTask({ task, mode, executor, directory });
      costs[mode] = run.cost;
      for (const metric of metrics) totals[mode][metric] += run.cost[metric];
      if (mode === 'json') reference = run.outcome;
      else if (!isDeepStrictEqual(run.outcome, reference)) {
        mismatches.push(
          `${task.name}: ${mode} ended differently from json\n  json: ${JSON.stringify(reference)}\n  ${mode}: ${JSON.stringify(run.outcome)}`,
        );
      }
    }
    rows.push({ task: task.name, costs });
  }
} finally {
  await executor.close();
  await rm(directory, { recursive: true, force: true });
}

const reduction = (json: number, other: number) => (json === 0 ? 0 : Math.round((1 - other / json) * 100));

if (values.json) {
  console.log(JSON.stringify({ machine: machineLine(directory), rows, totals, mismatches }, null, 2));
} else {
  console.log(
    `codeact tasks: ${ownerTasks.length} owner tasks, scripted policies (optimal per mode), not a real model`,
  );
  console.log(machineLine(os.tmpdir()));
  const header = ['task', 'mode', 'round trips', 'input tok', 'output tok', 'tool calls'];
  const table = [header];
  const line = (task: string, mode: Mode, cost: TaskCost) => [
    task,
    mode,
    ...metrics.map((metric) => String(cost[metric])),
  ];
  for (const row of rows) for (const mode of modes) table.push(line(row.task, mode, row.costs[mode]));
  for (const mode of modes) table.push(line('TOTAL', mode, totals[mode]));
  const widths = header.map((_, column) => Math.max(...table.map((cells) => cells[column]?.length ?? 0)));
  for (const cells of table) {
    console.log(
      cells
        .map((cell, column) => (column < 2 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0)))
        .join('  '),
    );
  }
  for (const mode of modes.filter((candidate) => candidate !== 'json')) {
    const parts = metrics.map((metric) => `${metric} ${reduction(totals.json[metric], totals[mode][metric])} %`);
    const worst = Math.min(...rows.map((row) => reduction(row.costs.json.inputTokens, row.costs[mode].inputTokens)));
    console.log(
      `${mode} against json, fewer in total: ${parts.join(', ')}; the worst task, input tokens: ${worst} % fewer (negative: more)`,
    );
  }
}
if (mismatches.length > 0) {
  console.error(`OUTCOMES DIFFER in ${mismatches.length} runs:\n${mismatches.join('\n')}`);
  process.exitCode = 1;
} else if (!values.json) {
  console.log(`outcomes: every mode left the same world and gave the same answer as json on all ${rows.length} tasks`);
}
