// Dependencies between workspace packages point one way (docs/architecture.md). A package may depend only on
// packages of a lower layer; every import names a declared dependency; no relative import reaches into another
// package. BullMQ runs a circular-import check before its tests for the same reason: a cycle found late is a
// redesign, a cycle found at the commit that adds it is a one-line fix.
import { readdir, readFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { repoRoot } from './helpers/node-process.ts';

/** Lower layers first. Integrations share one layer: they never depend on each other. */
const layers: readonly (readonly string[])[] = [
  ['@assistant/errors'],
  // The queue owns its config section's schema: config imports it, never the other way round.
  // The outbound rules (safe requests to addresses outside text chose) depend on errors alone, like the queue.
  // The code-as-action sandbox runs cells over primitives its caller supplies; it needs no other package.
  // What the email integration and the email chat channel share about mail (the IMAP client, trusted
  // authentication, plain addresses) needs no other package.
  ['@assistant/queue', '@assistant/outbound', '@assistant/codeact', '@assistant/mail'],
  // The queue's Redis backend implements the queue's interfaces on BullMQ; only the code that opens a backend uses it.
  ['@assistant/queue-redis'],
  ['@assistant/config'],
  ['@assistant/notes', '@assistant/process'],
  // The event ledger (daily JSONL under data/events/, the typed registry) needs notes' file helpers only.
  ['@assistant/llm', '@assistant/events'],
  // Memory's stores, consolidation and index: notes and one structured LLM call.
  ['@assistant/agent', '@assistant/memory'],
  [
    '@assistant/manifests',
    '@assistant/scheduler',
    '@assistant/sandbox',
    '@assistant/steering',
    '@assistant/metrics',
    // MCP servers' tools as agent tools; the worker owns the pool.
    '@assistant/mcp',
  ],
  // chat stores conversations as notes, enqueues turns and stops them through steering; its turn runner sits with
  // the integrations, above the agent.
  // mcp: its server half (Assistant as an MCP server) needs only the SDK; the stores behind it are the apps'.
  ['@assistant/automations', '@assistant/chat', '@assistant/mcp'],
  ['@assistant/actions'],
  // Hooks compile owner-written reactions to ledger events over the automations' conditions and plan them through
  // the action layer (approvals, enqueue); the worker runs them, integration-host checks them at load.
  // Agents: personas and their grant chains, sub-agents and workflows, over the action layer's tool patterns;
  // integration-host reads the personas for `config check`.
  ['@assistant/hooks', '@assistant/agents'],
  ['@assistant/integration-host'],
  ['@assistant/sdk'],
  ['integrations/*'],
  ['@assistant/server', '@assistant/worker'],
  ['@assistant/cli'],
];

const manifestSchema = z.object({
  name: z.string(),
  dependencies: z.record(z.string(), z.string()).optional(),
  devDependencies: z.record(z.string(), z.string()).optional(),
});

interface WorkspacePackage {
  name: string;
  directory: string;
  dependencies: string[];
  /** Only for tests and `testing` entry points (a fake server's web framework, say). */
  devDependencies: string[];
}

async function readManifest(file: string) {
  return manifestSchema.parse(JSON.parse(await readFile(file, 'utf8')));
}

async function workspacePackages(): Promise<WorkspacePackage[]> {
  const found: WorkspacePackage[] = [];
  for (const group of ['apps', 'packages', 'integrations']) {
    const entries = await readdir(path.join(repoRoot, group), { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (!entry.isDirectory()) continue;
      const directory = path.join(repoRoot, group, entry.name);
      const manifest = await readManifest(path.join(directory, 'package.json'));
      found.push({
        name: manifest.name,
        directory,
        dependencies: Object.keys(manifest.dependencies ?? {}),
        devDependencies: Object.keys(manifest.devDependencies ?? {}),
      });
    }
  }
  return found;
}

function layerOf(workspace: WorkspacePackage): number {
  const relative = path.relative(repoRoot, workspace.directory);
  return layers.findIndex((layer) =>
    layer.some(
      (entry) => entry === workspace.name || (entry === 'integrations/*' && relative.startsWith('integrations')),
    ),
  );
}

async function sourceFiles(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && /\.(ts|js|mjs)$/.test(entry.name))
    .map((entry) => path.join(entry.parentPath, entry.name))
    .filter((file) => !file.includes(`${path.sep}node_modules${path.sep}`));
}

// Static imports, re-exports and dynamic import() with a literal specifier.
const importPattern = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"]([^'"\s]+)['"]/gm;

function packageNameOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? specifier);
}

const builtins = new Set(builtinModules);

/**
 * Groups of files whose types name each other, type-only (erased at run time), each one concept split over files for
 * reading: an agent's options name its tools and a tool names the options of the loop it runs in; a queue backend
 * makes its consumer, and the consumer drives that backend's internals (its class type). Any other circle of imports,
 * or one of these growing, fails the test below.
 */
const knownTypeCircles: readonly (readonly string[])[] = [
  ['packages/queue/src/file-task-consumer.ts', 'packages/queue/src/file-task-queue.ts'],
  ['packages/queue-redis/src/redis-task-consumer.ts', 'packages/queue-redis/src/redis-task-queue.ts'],
  [
    'packages/agent/src/loop/agent-event.ts',
    'packages/agent/src/loop/agent-options.ts',
    'packages/agent/src/steering/steerable-handle.ts',
    'packages/agent/src/tools/define-tool.ts',
    'packages/agent/src/tools/tool-gate.ts',
  ],
];

/** The circles of relative imports (type-only ones too) among the files: Tarjan's strongly connected components. */
function importCircles(graph: Map<string, string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const connect = (file: string) => {
    index.set(file, counter);
    low.set(file, counter);
    counter += 1;
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(file, Math.min(low.get(file) ?? 0, low.get(next) ?? 0));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file) ?? 0, index.get(next) ?? 0));
    }
    if (low.get(file) !== index.get(file)) return;
    const circle: string[] = [];
    let member: string | undefined;
    do {
      member = stack.pop();
      if (member === undefined) break;
      onStack.delete(member);
      circle.push(member);
    } while (member !== file);
    if (circle.length > 1 || (graph.get(file) ?? []).includes(file)) circles.push(circle.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) connect(file);
  return circles;
}

describe('workspace dependency graph', () => {
  it('puts every workspace package in a layer and lets it depend only on lower layers', async () => {
    const packages = await workspacePackages();
    const byName = new Map(packages.map((workspace) => [workspace.name, workspace]));
    const problems: string[] = [];
    for (const workspace of packages) {
      const layer = layerOf(workspace);
      if (layer < 0) {
        problems.push(`${workspace.name} is in no layer: add it to the table in this test and docs/architecture.md`);
        continue;
      }
      for (const dependency of workspace.dependencies) {
        const target = byName.get(dependency);
        if (!target) continue;
        if (layerOf(target) >= layer) {
          problems.push(`${workspace.name} (layer ${layer}) depends on ${dependency} (layer ${layerOf(target)})`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('lets the queue depend on no workspace package but @assistant/errors (a backend swap touches nothing else)', async () => {
    const queue = (await workspacePackages()).find((workspace) => workspace.name === '@assistant/queue');
    expect(queue?.dependencies.filter((name) => name.startsWith('@assistant/'))).toEqual(['@assistant/errors']);
  });

  it('has no cycles', async () => {
    const packages = await workspacePackages();
    const byName = new Map(packages.map((workspace) => [workspace.name, workspace]));
    const state = new Map<string, 'visiting' | 'done'>();
    const cycles: string[] = [];
    const visit = (name: string, trail: string[]) => {
      if (state.get(name) === 'done') return;
      if (state.get(name) === 'visiting') {
        cycles.push([...trail.slice(trail.indexOf(name)), name].join(' → '));
        return;
      }
      state.set(name, 'visiting');
      for (const dependency of byName.get(name)?.dependencies ?? []) {
        if (byName.has(dependency)) visit(dependency, [...trail, name]);
      }
      state.set(name, 'done');
    };
    for (const workspace of packages) visit(workspace.name, []);
    expect(cycles).toEqual([]);
  });

  it('imports only declared dependencies and never reaches into another package by a relative path', async () => {
    const packages = await workspacePackages();
    const root = await readManifest(path.join(repoRoot, 'package.json'));
    const rootDevDependencies = new Set(Object.keys(root.devDependencies ?? {}));
    const problems: string[] = [];
    for (const workspace of packages) {
      const declared = new Set([workspace.name, ...workspace.dependencies]);
      for (const file of await sourceFiles(workspace.directory)) {
        const shown = path.relative(repoRoot, file);
        // Tests and test helpers may also use the root's dev tools (vitest, fast-check) and the package's own.
        const testCode = /\.test\.ts$/.test(file) || file.includes(`${path.sep}testing${path.sep}`);
        const devDependencies = new Set(workspace.devDependencies);
        const text = await readFile(file, 'utf8');
        for (const match of text.matchAll(importPattern)) {
          const specifier = match[1] ?? '';
          if (specifier.startsWith('.')) {
            const target = path.resolve(path.dirname(file), specifier);
            const insideRootManifest = target === path.join(repoRoot, 'package.json');
            if (!target.startsWith(workspace.directory + path.sep) && !insideRootManifest) {
              problems.push(`${shown}: '${specifier}' reaches outside ${workspace.name}; import the package instead`);
            }
            continue;
          }
          if (specifier.startsWith('node:') || builtins.has(specifier)) continue;
          const name = packageNameOf(specifier);
          if (declared.has(name) || (testCode && (rootDevDependencies.has(name) || devDependencies.has(name))))
            continue;
          problems.push(`${shown}: imports ${name}, which ${workspace.name}'s package.json does not declare`);
        }
      }
    }
    expect(problems).toEqual([]);
  });
  it('has no circle of imports between the files of a package (BullMQ checks the same before its tests)', async () => {
    const graph = new Map<string, string[]>();
    for (const workspace of await workspacePackages()) {
      for (const file of await sourceFiles(workspace.directory)) {
        if (!file.endsWith('.ts') || file.endsWith('.test.ts') || file.endsWith('.d.ts')) continue;
        const shown = path.relative(repoRoot, file);
        const targets: string[] = [];
        for (const match of (await readFile(file, 'utf8')).matchAll(importPattern)) {
          const specifier = match[1] ?? '';
          if (specifier.startsWith('.'))
            targets.push(path.relative(repoRoot, path.resolve(path.dirname(file), specifier)));
        }
        graph.set(shown, targets);
      }
    }
    for (const [file, targets] of graph)
      graph.set(
        file,
        targets.filter((target) => graph.has(target)),
      );
    const known = new Set(knownTypeCircles.map((circle) => [...circle].sort().join(' ')));
    const found = importCircles(graph).map((circle) => circle.join(' '));
    // A new circle fails; so does a known one that is gone (take it out of the list).
    expect(found.filter((circle) => !known.has(circle))).toEqual([]);
    expect([...known].filter((circle) => !found.includes(circle))).toEqual([]);
  });
});
