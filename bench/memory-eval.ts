// The memory evaluation set through consolidation and retrieval (issue 35, "Proof and measure"): recall@5 of the
// gold facts with the hashing embedder and with a fake embeddings endpoint, how often a superseded fact ranks above
// its replacement, contact dedupe precision/recall/F1, and injection attempts refused.
// `npm run bench:memory-eval [-- --json] [-- --misses]`. It prints figures; tests/memory-eval.test.ts asserts the
// goals. Results go in docs/performance.md and docs/memory.md.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { formatMemoryEvalReport, runMemoryEval } from '../tests/memory-eval/run-eval.ts';

const { values } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    misses: { type: 'boolean', default: false },
  },
});

const workDir = await mkdtemp(path.join(os.tmpdir(), 'assistant-bench-memory-eval-'));
try {
  const startedAt = performance.now();
  const report = await runMemoryEval({ workDir });
  const elapsedMs = Math.round(performance.now() - startedAt);
  if (values.json) {
    console.log(JSON.stringify({ ...report, elapsedMs }, null, 2));
  } else {
    console.log(formatMemoryEvalReport(report));
    console.log(`(run in ${elapsedMs} ms)`);
    if (values.misses) {
      for (const figures of report.retrieval) {
        console.log(`\nmisses at 5, ${figures.embedder} over ${figures.scope}:`);
        for (const miss of figures.misses) {
          console.log(`  "${miss.query}" wants ${miss.gold.join(', ')}; top: ${miss.top.join(', ')}`);
        }
      }
    }
  }
} finally {
  await rm(workDir, { recursive: true, force: true });
}
