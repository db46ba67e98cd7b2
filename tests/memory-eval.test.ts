// The memory evaluation set (tests/fixtures/memory-eval/) through the real consolidation and the real index: the
// goals of issue 35's "Proof and measure". `npm run bench:memory-eval` prints the same figures.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';
import { loadEvalSet } from './memory-eval/eval-set.ts';
import { formatMemoryEvalReport, type MemoryEvalReport, runMemoryEval } from './memory-eval/run-eval.ts';

// Floors set from the measured figures (docs/memory.md, "How well it works"): over facts and contacts 94.8 % with
// the hashing embedder and 98.3 % through the fake endpoint, over every note (the mails and threads compete) 87.9 %
// and 89.7 %. About five points below the lower of each pair — two or three queries of 58 — so a change that makes
// retrieval worse fails here while a harmless change that moves one query does not. Raise them when retrieval improves.
const recallAt5Floor = { memory: 0.9, all: 0.82 } as const;

describe('memory evaluation set', () => {
  let dir: TempDir;
  let report: MemoryEvalReport;

  beforeAll(async () => {
    dir = await tempDir();
    report = await runMemoryEval({ workDir: dir.path });
    // The figures in the test log, for whoever reads a failure.
    console.log(formatMemoryEvalReport(report));
  }, 180_000);

  afterAll(async () => {
    await dir?.[Symbol.asyncDispose]();
  });

  it('has at least 50 items of each kind asked for, time-ordered, with 50+ queries and 8+ superseding chains', async () => {
    const set = await loadEvalSet();
    expect(set.items.length).toBeGreaterThanOrEqual(55);
    expect(report.items).toMatchObject({ email: 30, chat: 15, github: 10 });
    expect(set.queries.length).toBeGreaterThanOrEqual(50);
    expect(report.facts.goldSupersedeLinks).toBeGreaterThanOrEqual(8);
    const times = set.items.map((item) => item.observedAt);
    expect(times).toEqual([...times].sort());
  });

  it('consolidates every item with one model call each and writes every gold fact and follow-up', () => {
    expect(report.items.skipped).toBe(0);
    expect(report.modelCalls).toBe(report.items.total);
    expect(report.facts.written).toBeGreaterThanOrEqual(report.facts.gold);
    expect(report.followups.goldWithTask).toBe(report.followups.gold);
    // Every requested supersede (minus the refused injections) became a link.
    expect(report.facts.supersedeLinks).toBe(report.facts.goldSupersedeLinks);
    // And each named a fact the prompt showed: a real model could have written every scripted answer.
    expect(report.supersedeTargetsNotInPrompt).toEqual([]);
  });

  it('never lets an item supersede an owner fact: the injection attempts are refused', () => {
    expect(report.injection.attempts).toBeGreaterThanOrEqual(2);
    expect(report.injection.refused).toBe(report.injection.attempts);
    expect(report.injection.ownerFactsSuperseded).toBe(0);
  });

  it('files person mentions under contacts with pairwise F1 ≥ 0.95', () => {
    expect(report.dedupe.mentions).toBeGreaterThanOrEqual(50);
    expect(report.dedupe.f1).toBeGreaterThanOrEqual(0.95);
  });

  it("makes no contact of a no-reply sender, a newsletter or the owner's own handle; only the phishing sender's is left", () => {
    // The newsletter, the airline's and the bank's no-reply addresses and `jreyes` were contacts before (5). The
    // phishing sender writes from an ordinary address; nothing in the item says it is no person.
    expect(report.unmentionedContacts).toEqual(['northwind-security-team']);
  });

  it('ranks a superseded fact above its replacement in at most 2 % of the cases', () => {
    for (const figures of report.retrieval) {
      expect(figures.supersededAbove.rate, `${figures.embedder} over ${figures.scope}`).toBeLessThanOrEqual(0.02);
    }
  });

  it('finds the gold facts in the first 5 hits, by the hashing embedder and through an embeddings endpoint', () => {
    expect(report.retrieval).toHaveLength(4);
    for (const figures of report.retrieval) {
      const label = `${figures.embedder} over ${figures.scope}`;
      // Hybrid throughout: the vectors took part (the fake endpoint was up), never a lexical fallback.
      expect(figures.modes, label).toEqual({ hybrid: figures.queries });
      expect(figures.recallAt5, label).toBeGreaterThanOrEqual(recallAt5Floor[figures.scope]);
    }
    // The endpoint's vectors came over HTTP (the OpenAI-compatible client against the loopback fake).
    expect(report.embeddingRequests).toBeGreaterThan(0);
    expect(new Set(report.retrieval.map((figures) => figures.embedder))).toEqual(
      new Set(['hashing-v1-256', 'eval-stems-512']),
    );
  });
});
