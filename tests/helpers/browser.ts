import { access, mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { expect, onTestFailed } from 'vitest';
import { readApiToken } from './api-token.ts';
import { freePort } from './free-port.ts';
import { cliMain, type NodeProcess, repoRoot, startNode } from './node-process.ts';
import type { TempDir } from './temp-dir.ts';

/** Debian's Chromium; Playwright's own browser download cannot work on these machines. */
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const chromiumInstallCommand = 'apt-get install -y --no-install-recommends chromium';

/** Flags that work on these machines (no sandbox as root, no network chatter to Google). */
const chromiumArgs = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

/**
 * Starts Debian's Chromium through playwright-core. Where it is missing this throws, never skips: in CI `.ci/run`
 * installs it, so a missing one is a broken machine; locally the error says how to install it.
 */
export async function launchBrowser(): Promise<Browser> {
  try {
    await access(chromiumPath);
  } catch {
    const where =
      process.env.CI === 'true'
        ? 'CI installs it in .ci/run, so this machine is not set up as CI expects'
        : 'the dashboard tests drive a real browser';
    throw new Error(
      `no Chromium at ${chromiumPath}; ${where}: install it with ${chromiumInstallCommand} (as root, after apt-get update)`,
    );
  }
  // Playwright gives each launch a fresh profile directory of its own, and runs it headless.
  return chromium.launch({ executablePath: chromiumPath, args: chromiumArgs });
}

export interface RunningAssistant extends AsyncDisposable {
  /** `http://127.0.0.1:<port>` */
  url: string;
  token: string;
  /** The data directory. */
  dataDir: string;
  process: NodeProcess;
  /** `fetch` against the server with the Bearer token. */
  api(pathAndQuery: string, init?: RequestInit): Promise<Response>;
}

export interface StartAssistantOptions {
  dir: TempDir;
  /** More config.yaml, appended after `data_dir`, `server` and `worker`. */
  extraConfig?: string;
  /** Only the server (`assistant serve`), no worker. @default false: server and worker (`assistant start`) */
  serverOnly?: boolean;
}

/** Runs Assistant for real (`assistant start`: server and worker) on a free port, with its own data directory. */
export async function startAssistant(options: StartAssistantOptions): Promise<RunningAssistant> {
  const port = await freePort();
  const config = await options.dir.write(
    'config.yaml',
    `data_dir: ./data
server: {host: 127.0.0.1, port: ${port}}
worker: {shutdown_grace: 2s, poll_interval: 100ms}
${options.extraConfig ?? ''}`,
  );
  const child = startNode({ args: [cliMain, options.serverOnly ? 'serve' : 'start', '--config', config] });
  try {
    await child.waitForOutput(/listening on/m, { timeoutMs: 20_000 });
    if (!options.serverOnly) await child.waitForOutput(/worker ready/m, { timeoutMs: 20_000 });
  } catch (error) {
    child.child.kill('SIGKILL');
    throw new Error(`assistant did not start: ${String(error)}\n${child.stdout()}\n${child.stderr()}`);
  }
  // A dashboard test that fails (seen in CI: a streamed reply or a live refresh that never came) shows what the
  // server and the worker said meanwhile.
  onTestFailed(() => {
    const tail = (text: string) => text.split('\n').slice(-80).join('\n');
    process.stderr.write(
      `--- assistant (${options.serverOnly ? 'serve' : 'start'}) stdout, last lines:\n${tail(child.stdout())}\n--- stderr:\n${tail(child.stderr())}\n`,
    );
  });
  const dataDir = path.join(options.dir.path, 'data');
  const token = await readApiToken(dataDir);
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    token,
    dataDir,
    process: child,
    api: (pathAndQuery, init = {}) =>
      fetch(`${url}${pathAndQuery}`, {
        ...init,
        headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string> | undefined) },
      }),
    async [Symbol.asyncDispose]() {
      child.child.kill('SIGTERM');
      const killer = setTimeout(() => child.child.kill('SIGKILL'), 10_000);
      await child.exited;
      clearTimeout(killer);
    },
  };
}

export interface DashboardPage extends AsyncDisposable {
  context: BrowserContext;
  page: Page;
  /** Messages the browser logged as errors (a CSP violation is one): a page test expects none. */
  consoleErrors: string[];
}

/**
 * A browser context logged in to the dashboard through its login form, at a 1280×800 window (or 360 px wide with
 * `narrow`), in the given colour scheme.
 */
export async function openDashboard(
  browser: Browser,
  assistant: Pick<RunningAssistant, 'url' | 'token'>,
  options: { colorScheme?: 'light' | 'dark'; narrow?: boolean } = {},
): Promise<DashboardPage> {
  const context = await browser.newContext({
    baseURL: assistant.url,
    colorScheme: options.colorScheme ?? 'light',
    viewport: options.narrow ? { width: 360, height: 740 } : { width: 1280, height: 800 },
  });
  // Below the tests' 30 s: a step that hangs (a navigation, a locator that never matches) fails with its own name
  // and Playwright's call log, not as a bare test timeout that says nothing of where it stopped (seen once in CI).
  context.setDefaultTimeout(20_000);
  const page = await context.newPage();
  followBootstrap(page);
  const consoleErrors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => consoleErrors.push(String(error)));
  await page.goto('/login');
  await page.getByLabel('Token').fill(assistant.token);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.waitForURL((url) => url.pathname === '/');
  return {
    context,
    page,
    consoleErrors,
    async [Symbol.asyncDispose]() {
      await context.close();
    },
  };
}

/**
 * Makes the page's navigations end where the dashboard's do (decision 0023): a page loaded in full is first the
 * bootstrap page, whose script fetches the page again with the tab's origin key and swaps its body in. Playwright's
 * `goto`, `reload`, `goBack`, `goForward` and `waitForURL` resolve at the bootstrap page's load; patched here, they
 * also wait for the swap, so what a test reads next is the page and not the bootstrap.
 */
export function followBootstrap(page: Page): void {
  const afterwards =
    <Arguments extends unknown[], Result>(original: (...args: Arguments) => Promise<Result>) =>
    async (...args: Arguments): Promise<Result> => {
      const result = await original(...args);
      await waitForDashboardPage(page);
      return result;
    };
  page.goto = afterwards(page.goto.bind(page));
  page.reload = afterwards(page.reload.bind(page));
  page.goBack = afterwards(page.goBack.bind(page));
  page.goForward = afterwards(page.goForward.bind(page));
  page.waitForURL = afterwards(page.waitForURL.bind(page));
}

/** Resolves once the page is not the bootstrap page (nor the login's own answer, which moves on by itself). */
async function waitForDashboardPage(page: Page): Promise<void> {
  await page.waitForFunction(
    () =>
      (globalThis as unknown as { document: { documentElement: { dataset: Record<string, string | undefined> } } })
        .document.documentElement.dataset.assistantSession === undefined,
    undefined,
    { timeout: 20_000 },
  );
}

/** How far the page scrolls sideways (0 when it fits its window): a page must fit 360 px without it. */
export function sidewaysOverflow(page: Page): Promise<number> {
  return page.evaluate(() => {
    const root = (
      globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }
    ).document.documentElement;
    return root.scrollWidth - root.clientWidth;
  });
}

const require = createRequire(import.meta.url);
let axeSource: string | undefined;

/**
 * Runs axe-core on the page as it is now and fails on any serious or critical violation, naming each with its nodes.
 * axe is evaluated through the DevTools protocol, which the page's CSP does not govern.
 */
export async function expectAccessible(page: Page, what: string): Promise<void> {
  axeSource ??= await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  const violations = (await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: unknown[] }> } }).axe;
    const result = await axe.run();
    return result.violations;
  })) as { id: string; impact: string; help: string; nodes: { target: string[] }[] }[];
  const serious = violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map(
      (violation) =>
        `${violation.id} (${violation.impact}): ${violation.help} at ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`,
    );
  expect(serious, `accessibility of ${what}`).toEqual([]);
}

/**
 * A screenshot for docs/dashboard.md. With UPDATE_SCREENSHOTS=1 it replaces `docs/dashboard/<name>-<scheme>.png`;
 * otherwise it is taken into the test's own directory, so an ordinary run leaves the working tree as it was.
 */
export async function screenshot(page: Page, name: string, scheme: 'light' | 'dark', scratch: string): Promise<string> {
  const directory = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(repoRoot, 'docs/dashboard') : scratch;
  await mkdir(directory, { recursive: true });
  const file = path.join(directory, `${name}-${scheme}.png`);
  await page.screenshot({ path: file, fullPage: false });
  return file;
}
