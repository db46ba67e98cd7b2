// What a CLI command costs to start: `npm run bench:cli [-- --runs 10 --dir /path --json]`.
// `assistant queue stats --json` on a fresh config and data dir, run one after the other, with Node's compile cache
// (as every command opens it, apps/cli/src/main.ts) and without it (NODE_DISABLE_COMPILE_CACHE=1): wall time from
// spawn to exit, the process's CPU (user + system) and peak RSS as it reports them at exit, and the modules it loaded.
// A one-line `--import` hook writes those figures; the first run with the cache fills it and is left out. It prints
// figures; it fails only when the command fails.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { cliMain, machineLine, runNode } from './bench-processes.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '10' },
    dir: { type: 'string', default: os.tmpdir() },
    json: { type: 'boolean', default: false },
  },
});
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs expects a positive integer, got \`${values.runs}\``);
const log = (line: string) => {
  if (!values.json) process.stdout.write(`${line}\n`);
};

const dir = await mkdtemp(path.join(values.dir, 'assistant-bench-cli-'));
const report = path.join(dir, 'report.json');
const hook = path.join(dir, 'report.mjs');
await writeFile(
  hook,
  `import fs from 'node:fs';
import module from 'node:module';
let modules = 0;
module.registerHooks({ load(url, context, next) { modules += 1; return next(url, context); } });
process.on('exit', () => {
  const usage = process.resourceUsage();
  fs.writeFileSync(${JSON.stringify(report)}, JSON.stringify({ cpuMs: (usage.userCPUTime + usage.systemCPUTime) / 1000, maxRssKb: usage.maxRSS, modules }));
});
`,
);
await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\n');

interface Run {
  wallMs: number;
  cpuMs: number;
  maxRssKb: number;
  modules: number;
}

async function once(cache: boolean): Promise<Run> {
  const started = performance.now();
  const child = runNode([cliMain, 'queue', 'stats', '--json'], {
    cwd: dir,
    env: { NODE_OPTIONS: `--import ${hook}`, ...(cache ? {} : { NODE_DISABLE_COMPILE_CACHE: '1' }) },
  });
  const exit = await child.exited;
  if (exit.code !== 0) throw new Error(`assistant queue stats failed (${exit.code}):\n${child.output()}`);
  const figures = JSON.parse(await readFile(report, 'utf8')) as Omit<Run, 'wallMs'>;
  return { wallMs: exit.atMs - started, ...figures };
}

const median = (numbers: number[]) => {
  const sorted = [...numbers].sort((left, right) => left - right);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

log(`cli bench: ${machineLine(dir)}`);
log(`assistant queue stats --json, ${runs} runs each, one after the other`);
try {
  await once(true); // fills the compile cache
  const results: Record<'cache' | 'noCache', Run[]> = { cache: [], noCache: [] };
  // Alternating, so that a change in the machine's load falls on both alike.
  for (let index = 0; index < runs; index += 1) {
    results.cache.push(await once(true));
    results.noCache.push(await once(false));
  }
  const summary = Object.fromEntries(
    Object.entries(results).map(([name, list]) => [
      name,
      {
        wallMs: median(list.map((run) => run.wallMs)),
        cpuMs: median(list.map((run) => run.cpuMs)),
        maxRssMb: median(list.map((run) => run.maxRssKb)) / 1024,
        modules: median(list.map((run) => run.modules)),
      },
    ]),
  ) as Record<'cache' | 'noCache', { wallMs: number; cpuMs: number; maxRssMb: number; modules: number }>;
  for (const [label, figures] of [
    ['with the compile cache   ', summary.cache],
    ['without it               ', summary.noCache],
  ] as const) {
    log(
      `${label}median ${figures.wallMs.toFixed(0)} ms wall, ${figures.cpuMs.toFixed(0)} ms CPU, ${figures.maxRssMb.toFixed(0)} MB peak RSS, ${figures.modules} modules`,
    );
  }
  if (values.json) process.stdout.write(`${JSON.stringify({ runs, ...summary }, null, 2)}\n`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
