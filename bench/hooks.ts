// bench:hooks — what deciding hooks costs per event.
//
// 100 deterministic hooks (fast path only: `on:` task.done, `when:` over trusted fields, one of them with an `any:`
// group and a `count:`-free notify action), compiled with the ledger's registry as the worker compiles them; each
// event of the ledger's type is decided by all 100, as the runner does for every event (decideHook per hook). Five
// of the hundred match each event, so their actions are rendered too. p50/p99 per event; goal p99 ≤ 2 ms.
//
// Usage: node bench/hooks.ts [--events 5000]
import os from 'node:os';
import { type EventRecord, EventRegistry } from '@assistant/events';
import { type CompiledHook, compileHook, decideHook } from '@assistant/hooks';

const eventsArg = process.argv.indexOf('--events');
const count = eventsArg === -1 ? 5_000 : Number(process.argv[eventsArg + 1]);
const registry = new EventRegistry();
const catalog = {
  service: () => ({ problem: 'none' }),
  scripts: {},
  taskTypes: { 'system.echo': { tier: 'read_only' as const } },
  instances: ['personal'],
  llms: ['default'],
};
const hooks: CompiledHook[] = Array.from({ length: 100 }, (_, index) => {
  const { hook, problems } = compileHook({
    source: {
      on: 'task.done',
      when:
        index % 10 === 0
          ? { any: [{ task_type: `type-${index % 20}` }, { integration: 'personal' }], attempts: '< 3' }
          : { task_type: `type-${index % 20}`, attempts: '< 3' },
      // biome-ignore lint/suspicious/noThenProperty: a hook's `then:`, as people write it
      then: [{ notify: `{{event.data.task_type}} done ({{event.data.task}})` }],
    },
    name: `hook-${index}`,
    file: 'bench',
    line: 1,
    registry,
    catalog,
  });
  if (!hook) throw new Error(JSON.stringify(problems));
  return hook;
});

const times: number[] = [];
let fired = 0;
for (let index = 0; index < count; index++) {
  const event: EventRecord = {
    id: `ev-${index.toString(16).padStart(20, '0')}`,
    type: 'task.done',
    at: new Date().toISOString(),
    source: 'queue',
    native_id: `t${index}:1`,
    data: { task: `t${index}`, task_type: `type-${index % 20}`, integration: 'work', attempts: 1 },
  };
  const started = performance.now();
  for (const hook of hooks) {
    const decision = await decideHook({ hook, event });
    if (decision.fire) fired += 1;
  }
  times.push(performance.now() - started);
}
times.sort((a, b) => a - b);
const at = (p: number) => (times[Math.min(times.length - 1, Math.floor(times.length * p))] ?? 0).toFixed(3);
console.log(`machine: ${os.cpus()[0]?.model ?? 'unknown'} x${os.cpus().length}, Node ${process.version}`);
console.log(
  `${hooks.length} hooks per event, ${count} events (${(fired / count).toFixed(1)} fire per event): p50 ${at(0.5)} ms, p99 ${at(0.99)} ms per event`,
);
