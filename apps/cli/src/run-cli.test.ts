import { describe, expect, it } from 'vitest';
import type { CliContext } from './cli-context.ts';
import { runCli } from './run-cli.ts';

function bufferedContext(): CliContext & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: (text: string) => (err += text) },
    env: {},
    cwd: process.cwd(),
    out: () => out,
    err: () => err,
  };
}

describe('runCli', () => {
  it('runs a command in-process with the given streams', async () => {
    const context = bufferedContext();
    expect(await runCli({ argv: ['version'], context })).toBe(0);
    expect(context.out()).toMatch(/^assistant \S+ \(node v/);
  });

  it('exits 2 with help on stderr when no command is given', async () => {
    const context = bufferedContext();
    expect(await runCli({ argv: [], context })).toBe(2);
    expect(context.err()).toContain('Usage: assistant');
  });

  it('exits 0 for --help', async () => {
    const context = bufferedContext();
    expect(await runCli({ argv: ['--help'], context })).toBe(0);
    expect(context.out()).toContain('Commands:');
  });

  it('reports a missing config file as a usage error with a hint', async () => {
    const context = bufferedContext();
    expect(await runCli({ argv: ['config', 'check', '--config', '/nonexistent/config.yaml'], context })).toBe(2);
    expect(context.err()).toBe(
      'assistant: config file /nonexistent/config.yaml does not exist\n' +
        'hint: pass --config FILE, set ASSISTANT_CONFIG, or run from the directory that holds config.yaml\n',
    );
  });
});
