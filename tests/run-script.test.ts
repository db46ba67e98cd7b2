import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import {
  checkBubblewrap,
  type RunScriptOptions,
  runScript,
  SandboxUnavailableError,
  ScriptFailedError,
  type ScriptLogLevel,
  ScriptTimeoutError,
} from '@assistant/sandbox';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const bubblewrap = (await checkBubblewrap()).usable;
const installBubblewrap = 'install bubblewrap (apt-get install bubblewrap)';
// Every behaviour that does not depend on the sandbox is checked both with and without it where bwrap works.
const sandboxModes = bubblewrap ? (['none', 'bubblewrap'] as const) : (['none'] as const);

let directory: string;

beforeEach(async () => {
  directory = await mkdtemp(path.join(tmpdir(), 'run-script-'));
});

afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

function workDir(): string {
  return path.join(directory, 'data', 'scripts', 'notify');
}

/** Options for a script named `notify`, with a timeout long enough never to fire unless a test wants it to. */
function scriptOptions(
  script: Partial<RunScriptOptions['script']>,
  rest: Partial<RunScriptOptions> = {},
): RunScriptOptions {
  return {
    name: 'notify',
    script: { inputs: [], timeoutMs: 10_000, ...script },
    inputs: {},
    configDir: directory,
    workDir: workDir(),
    ...rest,
  };
}

async function writeNodeScript(fileName: string, source: string): Promise<string> {
  await mkdir(path.join(directory, 'scripts'), { recursive: true });
  await writeFile(path.join(directory, 'scripts', fileName), source);
  return `./scripts/${fileName}`;
}

/** Resolves once `check` returns a value other than undefined; fails after `timeoutMs`. */
async function waitFor<T>(description: string, check: () => Promise<T | undefined>, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${description}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Reads a file the script wrote with `echo … > file.tmp && mv file.tmp file`, so it is complete once it exists. */
function waitForFile(file: string): Promise<string> {
  return waitFor(file, () => readFile(file, 'utf8').catch(() => undefined));
}

/** True while the process exists and is not a zombie (an exited process nobody has reaped yet). */
async function isRunning(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  if (process.platform !== 'linux') return true;
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  // The state letter follows the command name, which is in parentheses and may itself contain spaces.
  return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
}

function waitUntilGone(pid: number): Promise<true> {
  return waitFor(`process ${pid} to end`, async () => ((await isRunning(pid)) ? undefined : true));
}

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('Expected the promise to reject, but it resolved');
}

const recordPid = (variable: string, file: string): string =>
  `echo "${variable}" > ${file}.tmp && mv ${file}.tmp ${file}`;

describe.each(sandboxModes)('runScript (sandbox: %s)', (sandbox) => {
  it('passes declared inputs as ASSISTANT_INPUT_ variables holding strings when the script runs', async () => {
    const shell = `printf '{"channel":"%s","count":"%s","loud":"%s","quiet":"%s"}' \\
      "$ASSISTANT_INPUT_CHANNEL" "$ASSISTANT_INPUT_COUNT" "$ASSISTANT_INPUT_LOUD" "$ASSISTANT_INPUT_QUIET" \\
      > "$ASSISTANT_RESULT_FILE"`;
    const run = await runScript(
      scriptOptions(
        { shell, inputs: ['channel', 'count', 'loud', 'quiet'] },
        { sandbox, inputs: { channel: 'general', count: 2.5, loud: true, quiet: false } },
      ),
    );
    expect(run.result).toEqual({ channel: 'general', count: '2.5', loud: 'true', quiet: 'false' });
    expect(run.exitCode).toBe(0);
    expect(run.sandbox).toBe(sandbox);
  });

  it('returns a null result and removes the run folder when the script writes no result file', async () => {
    const run = await runScript(
      scriptOptions({ shell: 'echo "$ASSISTANT_RESULT_FILE" > result-path.txt' }, { sandbox }),
    );
    expect(run.result).toBeNull();
    const resultFile = (await readFile(path.join(workDir(), 'result-path.txt'), 'utf8')).trim();
    expect(path.basename(path.dirname(resultFile))).toMatch(/^assistant-script-run-/);
    expect(existsSync(path.dirname(resultFile))).toBe(false);
  });

  it('throws ScriptFailedError naming the result file when the script writes invalid JSON to it', async () => {
    const error = await rejectionOf(
      runScript(scriptOptions({ shell: `echo '{"unfinished":' > "$ASSISTANT_RESULT_FILE"` }, { sandbox })),
    );
    expect(error).toBeInstanceOf(ScriptFailedError);
    expect(String(error)).toMatch(/script notify wrote invalid JSON to its result file \S+result\.json: /);
  });

  it('calls onLog with each line as it arrives when a shell script uses the log helpers', async () => {
    const logs: [ScriptLogLevel, string][] = [];
    const go = path.join(workDir(), 'go');
    const shell = `log_human "Sent to $ASSISTANT_INPUT_CHANNEL"
      log_info "first
second"
      log_warn "$(head -c 1500 /dev/zero | tr '\\0' x)"
      log_info ready
      # Waits for the test, which creates the file only after it has seen "ready": proof that lines arrive live.
      while [ ! -e go ]; do sleep 0.01; done
      log_info done`;
    await runScript(
      scriptOptions(
        { shell, inputs: ['channel'] },
        {
          sandbox,
          inputs: { channel: 'general' },
          onLog: (level, message) => {
            logs.push([level, message]);
            if (message === 'ready') void writeFile(go, '');
          },
        },
      ),
    );
    expect(logs).toEqual([
      ['human', 'Sent to general'],
      ['info', 'first second'],
      ['warn', 'x'.repeat(1_000)],
      ['info', 'ready'],
      ['info', 'done'],
    ]);
  });

  it('gives a node script the helpers and runs it with the same Node as Assistant', async () => {
    const node = await writeNodeScript(
      'tidy.mjs',
      `const { logHuman, logInfo, logWarn, setResult } = await import(process.env.ASSISTANT_HELPERS);
      logHuman('Tidied 3 notes');
      logInfo('two\\nlines');
      logWarn('careful');
      setResult({ execPath: process.execPath, cwd: process.cwd(), home: process.env.HOME });`,
    );
    const logs: [ScriptLogLevel, string][] = [];
    const run = await runScript(
      scriptOptions({ node }, { sandbox, onLog: (level, message) => logs.push([level, message]) }),
    );
    expect(logs).toEqual([
      ['human', 'Tidied 3 notes'],
      ['info', 'two lines'],
      ['warn', 'careful'],
    ]);
    const workFolder = await realpath(workDir());
    expect(run.result).toEqual({ execPath: process.execPath, cwd: workFolder, home: workFolder });
  });

  it("gives the script none of the parent's environment variables", async () => {
    process.env.ASSISTANT_TEST_SECRET = 'hunter2';
    try {
      await runScript(scriptOptions({ shell: 'env > environment.txt' }, { sandbox, env: { EXTRA: 'given' } }));
    } finally {
      delete process.env.ASSISTANT_TEST_SECRET;
    }
    const environment = await readFile(path.join(workDir(), 'environment.txt'), 'utf8');
    expect(environment).not.toContain('hunter2');
    expect(environment).toContain('EXTRA=given\n');
    expect(environment).toContain('ASSISTANT_SCRIPT=notify\n');
    expect(environment).toContain(`HOME=${await realpath(workDir())}\n`);
  });

  it('throws ScriptFailedError with the exit code and the last stderr line when the script exits non-zero', async () => {
    const error = await rejectionOf(
      runScript(scriptOptions({ shell: 'echo starting >&2; echo "no such channel" >&2; exit 3' }, { sandbox })),
    );
    expect(error).toBeInstanceOf(ScriptFailedError);
    expect(error).toMatchObject({
      message: 'script notify exited with code 3: no such channel',
      exitCode: 3,
      scriptName: 'notify',
    });
  });

  it("quotes the error rather than Node's trailer when a node script throws", async () => {
    const node = await writeNodeScript('fail.mjs', `throw new Error('the archive folder is missing');`);
    const error = await rejectionOf(runScript(scriptOptions({ node }, { sandbox })));
    expect(error).toBeInstanceOf(ScriptFailedError);
    expect((error as Error).message).toBe('script notify exited with code 1: Error: the archive folder is missing');
  });

  it('keeps only the last 4 KiB of stdout and stderr when the script writes more', async () => {
    const shell = `i=0
      while [ $i -lt 2000 ]; do echo "line $i"; echo "problem $i" >&2; i=$((i + 1)); done
      echo end-of-output; echo end-of-errors >&2`;
    const run = await runScript(scriptOptions({ shell }, { sandbox }));
    expect(run.stdoutTail.length).toBeLessThanOrEqual(4_096);
    expect(run.stdoutTail).toMatch(/line 1999\nend-of-output\n$/);
    expect(run.stderrTail.length).toBeLessThanOrEqual(4_096);
    expect(run.stderrTail).toMatch(/problem 1999\nend-of-errors\n$/);
  });
});

describe('runScript', () => {
  it('refuses to run a script when bubblewrap is missing, unless the sandbox is none', async () => {
    const missing = path.join(directory, 'no-such-bwrap');
    const shell = 'touch ran';
    const error = await rejectionOf(runScript(scriptOptions({ shell }, { bubblewrapPath: missing })));
    expect(error).toBeInstanceOf(SandboxUnavailableError);
    expect((error as Error).message).toBe(
      `script notify was not run: it needs the bubblewrap sandbox, and the bubblewrap executable \`${missing}\` was ` +
        'not found. Install bubblewrap (apt-get install bubblewrap) and restart Assistant, or, knowing that scripts ' +
        'then read and write whatever Assistant can, set `worker.sandbox: none` in config.yaml',
    );
    expect(existsSync(path.join(workDir(), 'ran'))).toBe(false);
    const run = await runScript(scriptOptions({ shell }, { bubblewrapPath: missing, sandbox: 'none' }));
    expect(run.sandbox).toBe('none');
    expect(existsSync(path.join(workDir(), 'ran'))).toBe(true);
  });

  it('throws before running anything when given an input the script does not declare', async () => {
    const error = await rejectionOf(
      runScript(
        scriptOptions({ shell: 'touch ran', inputs: ['channel'] }, { inputs: { channel: 'a', colour: 'red' } }),
      ),
    );
    expect(String(error)).toContain('script notify was given input `colour`, which it does not declare');
    expect(existsSync(path.join(workDir(), 'ran'))).toBe(false);
  });

  it('throws a clear error when the node file does not exist', async () => {
    const error = await rejectionOf(runScript(scriptOptions({ node: './scripts/missing.js' })));
    expect(String(error)).toContain('script notify: `node: ./scripts/missing.js` is not a file');
  });

  it('rejects without running when the signal is already aborted', async () => {
    const reason = new Error('owner cancelled');
    const error = await rejectionOf(
      runScript(scriptOptions({ shell: 'touch ran' }, { signal: AbortSignal.abort(reason) })),
    );
    expect(error).toBe(reason);
    expect(existsSync(path.join(workDir(), 'ran'))).toBe(false);
  });

  // Without a PID namespace the pids the script writes are real ones, so the test can check them directly.
  it('kills the script and the processes it started when it runs past its timeout', async () => {
    const shell = `sleep 300 &
      ${recordPid('$!', 'grandchild.pid')}
      ${recordPid('$$', 'script.pid')}
      sleep 300`;
    const error = await rejectionOf(runScript(scriptOptions({ shell, timeoutMs: 500 }, { sandbox: 'none' })));
    expect(error).toBeInstanceOf(ScriptTimeoutError);
    expect((error as Error).message).toBe('script notify ran past its 500ms timeout and was killed');
    await waitUntilGone(Number(await readFile(path.join(workDir(), 'script.pid'), 'utf8')));
    await waitUntilGone(Number(await readFile(path.join(workDir(), 'grandchild.pid'), 'utf8')));
  });

  it.runIf(process.platform === 'linux')(
    'still ends when a process that left the process group keeps the output open',
    async () => {
      // setsid puts the sleep in a session of its own, out of reach of the group kill, with stdout still inherited.
      const shell = `setsid sleep 300 &
        ${recordPid('$!', 'escaped.pid')}`;
      const run = runScript(scriptOptions({ shell }, { sandbox: 'none' }));
      const escaped = Number(await waitForFile(path.join(workDir(), 'escaped.pid')));
      try {
        expect((await run).exitCode).toBe(0);
      } finally {
        process.kill(escaped, 'SIGKILL');
      }
    },
  );

  it("kills the whole process group and rejects with the signal's reason when aborted", async () => {
    const controller = new AbortController();
    const shell = `sleep 300 &
      ${recordPid('$!', 'grandchild.pid')}
      ${recordPid('$$', 'script.pid')}
      sleep 300`;
    const running = rejectionOf(runScript(scriptOptions({ shell }, { sandbox: 'none', signal: controller.signal })));
    const script = Number(await waitForFile(path.join(workDir(), 'script.pid')));
    const grandchild = Number(await waitForFile(path.join(workDir(), 'grandchild.pid')));
    expect(await isRunning(grandchild)).toBe(true);
    const reason = new Error('owner cancelled');
    controller.abort(reason);
    expect(await running).toBe(reason);
    await waitUntilGone(script);
    await waitUntilGone(grandchild);
  });

  it('kills what the script left running in the background when the script itself exits', async () => {
    const shell = `sleep 300 > /dev/null 2>&1 &
      ${recordPid('$!', 'grandchild.pid')}`;
    await runScript(scriptOptions({ shell }, { sandbox: 'none' }));
    await waitUntilGone(Number(await readFile(path.join(workDir(), 'grandchild.pid'), 'utf8')));
  });
});

/**
 * Starts a loopback server that greets every connection. A script that waits for the greeting before exiting 0
 * proves it connected. Each test starts its own rather than a nested describe's hook doing it, because vitest did
 * not run the outer afterEach for nested tests that a hook skipped, leaking their folders.
 */
async function startGreetingServer(): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const server = createServer((socket) => {
    connections += 1;
    socket.end('hello\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('Expected the server to listen on a TCP port');
  return {
    port: address.port,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const connectScript = `import net from 'node:net';
const socket = net.connect(Number(process.env.ASSISTANT_INPUT_PORT), '127.0.0.1');
socket.on('data', () => socket.destroy());
socket.on('error', (error) => {
  console.error('cannot connect: ' + error.code);
  process.exit(1);
});`;

describe('runScript under bubblewrap', () => {
  beforeEach((context) => {
    if (bubblewrap) return;
    if (process.env.CI === 'true') throw new Error(`bwrap is missing or cannot create a sandbox: ${installBubblewrap}`);
    context.skip(installBubblewrap);
  });

  it("hole 8: a script cannot read $HOME, config.yaml, the data dir or another script's folder", async () => {
    // Outside /tmp, where an owner's config folder really lives (a private /tmp would hide it by accident), and a
    // file in the real home folder under a name no one else uses.
    const base = await mkdtemp('/var/tmp/assistant-hole-8-');
    const homeFile = path.join(homedir(), `.assistant-hole-8-${randomBytes(6).toString('hex')}`);
    try {
      const planted = {
        home: homeFile,
        config: path.join(base, 'config.yaml'),
        secrets: path.join(base, 'secrets.yaml'),
        llmCache: path.join(base, 'llm-cache', 'recording.json'),
        notes: path.join(base, 'data', 'notes', 'private.md'),
        otherScript: path.join(base, 'data', 'scripts', 'other', 'state.json'),
        checkout: path.join(process.cwd(), 'package.json'),
      };
      for (const [name, file] of Object.entries(planted)) {
        if (name === 'checkout') continue;
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, `planted ${name}\n`);
      }
      await mkdir(path.join(base, 'scripts'), { recursive: true });
      const reader = `import { readFileSync } from 'node:fs';
        const { setResult } = await import(process.env.ASSISTANT_HELPERS);
        const seen = {};
        for (const [name, file] of Object.entries(JSON.parse(process.env.ASSISTANT_INPUT_FILES))) {
          try { readFileSync(file); seen[name] = 'read'; } catch (error) { seen[name] = error.code; }
        }
        setResult(seen);`;
      await writeFile(path.join(base, 'scripts', 'reader.mjs'), reader);
      await writeFile(path.join(base, 'reader.mjs'), reader);
      const files = JSON.stringify({ ...planted, own: path.join(base, 'scripts', 'reader.mjs') });
      const options = (node: string): RunScriptOptions => ({
        name: 'reader',
        script: { node, inputs: ['files'], timeoutMs: 10_000 },
        inputs: { files },
        configDir: base,
        workDir: path.join(base, 'data', 'scripts', 'reader'),
        sandbox: 'bubblewrap',
      });
      const unreadable = {
        home: 'ENOENT',
        config: 'ENOENT',
        secrets: 'ENOENT',
        llmCache: 'ENOENT',
        notes: 'ENOENT',
        otherScript: 'ENOENT',
        checkout: 'ENOENT',
      };
      // A script in a folder of its own sees that folder (its own file), nothing else.
      const inFolder = await runScript(options('./scripts/reader.mjs'));
      expect(inFolder.result).toEqual({ ...unreadable, own: 'read' });
      // A script next to config.yaml gets only its own file: the folder holds what it must not read.
      const nextToConfig = await runScript(options('./reader.mjs'));
      expect(nextToConfig.result).toEqual({ ...unreadable, own: 'ENOENT' });
    } finally {
      await rm(base, { recursive: true, force: true });
      await rm(homeFile, { force: true });
    }
  });

  it('lets the script write inside its work folder', async () => {
    const run = await runScript(scriptOptions({ shell: 'echo kept > note.txt' }, { sandbox: 'bubblewrap' }));
    expect(run.sandbox).toBe('bubblewrap');
    expect(await readFile(path.join(workDir(), 'note.txt'), 'utf8')).toBe('kept\n');
  });

  it('fails with ScriptFailedError when the script writes to a file outside its work folder', async () => {
    const outside = `/etc/assistant-sandbox-test-${randomBytes(6).toString('hex')}`;
    try {
      const error = await rejectionOf(
        runScript(scriptOptions({ shell: `echo escaped > ${outside}` }, { sandbox: 'bubblewrap' })),
      );
      expect(error).toBeInstanceOf(ScriptFailedError);
      expect((error as Error).message).toMatch(/^script notify exited with code \d+: .*Read-only file system/);
      expect(existsSync(outside)).toBe(false);
    } finally {
      await rm(outside, { force: true });
    }
  });

  it('sees only the /etc files it needs, and those for DNS and TLS only with network: true', async () => {
    const shell =
      'for f in passwd resolv.conf hosts ssl/certs ssl/private shadow; do [ -e /etc/$f ] && echo $f; done; true';
    const offline = await runScript(scriptOptions({ shell }, { sandbox: 'bubblewrap' }));
    expect(offline.stdoutTail).toBe('passwd\n');
    const online = await runScript(scriptOptions({ shell, network: true }, { sandbox: 'bubblewrap' }));
    expect(online.stdoutTail.split('\n')).toEqual(expect.arrayContaining(['passwd', 'resolv.conf', 'hosts']));
    expect(online.stdoutTail).not.toMatch(/private|shadow/);
  });

  it("keeps the inputs out of every process's command line and closes bwrap's argument descriptor", async () => {
    const value = `subject-${randomBytes(8).toString('hex')}`;
    // test -e looks at the shell's own descriptors without opening one (listing /proc/self/fd would).
    const shell = `if [ -e /proc/$$/fd/4 ]; then echo open; else echo closed; fi > descriptor.txt
      echo ready > ready.tmp && mv ready.tmp ready
      while [ ! -e go ]; do sleep 0.01; done`;
    const running = runScript(
      scriptOptions({ shell, inputs: ['subject'] }, { sandbox: 'bubblewrap', inputs: { subject: value } }),
    );
    await waitForFile(path.join(workDir(), 'ready'));
    const commandLines: string[] = [];
    for (const entry of await readdir('/proc')) {
      if (/^\d+$/.test(entry)) commandLines.push(await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => ''));
    }
    await writeFile(path.join(workDir(), 'go'), '');
    await running;
    expect(commandLines.some((line) => line.includes('--args'))).toBe(true);
    expect(commandLines.filter((line) => line.includes(value))).toEqual([]);
    expect(await readFile(path.join(workDir(), 'descriptor.txt'), 'utf8')).toBe('closed\n');
  });

  it('makes no folder where a link the script left in its work folder points, and keeps runs apart', async () => {
    // Outside the sandbox's view (the test folder is under the real /tmp); Assistant, not the script, could reach it.
    const outside = path.join(directory, 'outside');
    await mkdir(outside);
    await runScript(scriptOptions({ shell: `rm -rf .runs; ln -s ${outside} .runs` }, { sandbox: 'bubblewrap' }));
    const shell = `echo "$ASSISTANT_RESULT_FILE" > result-path.txt
      echo ready > ready.tmp && mv ready.tmp ready
      while [ ! -e go ]; do sleep 0.01; done
      echo '{"ok": true}' > "$ASSISTANT_RESULT_FILE"`;
    const running = runScript(scriptOptions({ shell }, { sandbox: 'bubblewrap' }));
    await waitForFile(path.join(workDir(), 'ready'));
    const madeOutside = await readdir(outside);
    const resultFile = (await readFile(path.join(workDir(), 'result-path.txt'), 'utf8')).trim();
    await writeFile(path.join(workDir(), 'go'), '');
    expect((await running).result).toEqual({ ok: true });
    expect(madeOutside).toEqual([]);
    // Another run of the same script shares the work folder; the result file is not in it.
    expect(resultFile.startsWith(`${await realpath(workDir())}/`)).toBe(false);
  });

  it("keeps writes to /tmp inside the sandbox's private /tmp", async () => {
    // The test folder lives under the real /tmp; inside the sandbox /tmp is an empty tmpfs, so the write lands there.
    const outside = path.join(directory, 'escaped.txt');
    await runScript(scriptOptions({ shell: `echo escaped > ${outside}` }, { sandbox: 'bubblewrap' }));
    expect(existsSync(outside)).toBe(false);
  });

  it('cannot open a TCP connection to a loopback server without network: true', async () => {
    const server = await startGreetingServer();
    try {
      const node = await writeNodeScript('connect.mjs', connectScript);
      const error = await rejectionOf(
        runScript(scriptOptions({ node, inputs: ['port'] }, { sandbox: 'bubblewrap', inputs: { port: server.port } })),
      );
      expect(error).toBeInstanceOf(ScriptFailedError);
      expect((error as Error).message).toMatch(/: cannot connect: /);
      expect(server.connections()).toBe(0);
    } finally {
      await server.close();
    }
  });

  it('connects to a loopback server with network: true', async () => {
    const server = await startGreetingServer();
    try {
      const node = await writeNodeScript('connect.mjs', connectScript);
      const run = await runScript(
        scriptOptions(
          { node, inputs: ['port'], network: true },
          { sandbox: 'bubblewrap', inputs: { port: server.port } },
        ),
      );
      expect(run.exitCode).toBe(0);
      expect(server.connections()).toBe(1);
    } finally {
      await server.close();
    }
  });

  it('kills everything the script started inside the sandbox when aborted', async () => {
    // Inside the sandbox's PID namespace the script sees other pids than the host, so find its processes by an
    // environment variable only they carry.
    const markerValue = randomBytes(8).toString('hex');
    const marker = `ASSISTANT_TEST_MARKER=${markerValue}`;
    const processesWithMarker = async (): Promise<number[]> => {
      const pids: number[] = [];
      for (const entry of await readdir('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        const environment = await readFile(`/proc/${entry}/environ`, 'utf8').catch(() => '');
        if (environment.split('\0').includes(marker) && (await isRunning(Number(entry)))) pids.push(Number(entry));
      }
      return pids;
    };
    const controller = new AbortController();
    const shell = `sleep 300 &
      ${recordPid('$!', 'grandchild.pid')}
      sleep 300`;
    const running = rejectionOf(
      runScript(
        scriptOptions(
          { shell },
          { sandbox: 'bubblewrap', signal: controller.signal, env: { ASSISTANT_TEST_MARKER: markerValue } },
        ),
      ),
    );
    await waitForFile(path.join(workDir(), 'grandchild.pid'));
    // bwrap, its init, the shell and both sleeps: the pid file is written as the first sleep starts, before the
    // second one has, so wait for them (on a loaded machine the count lagged the file).
    await waitFor('the sandboxed processes to start', async () =>
      (await processesWithMarker()).length >= 3 ? true : undefined,
    );
    controller.abort(new Error('owner cancelled'));
    await running;
    await waitFor('the sandboxed processes to end', async () =>
      (await processesWithMarker()).length === 0 ? true : undefined,
    );
  });
});
