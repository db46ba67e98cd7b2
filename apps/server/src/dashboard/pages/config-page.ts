import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { readYaml } from '@assistant/config';
import { type ConfigCheck, checkConfig, checkPersonas } from '@assistant/integration-host';
import { installation } from '@assistant/process';
import type { AssistantServer } from '../../server-type.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute } from '../dashboard-route.ts';
import { html } from '../html.ts';
import { sendPage, timeTag } from '../layout.ts';
import { type ConfigSource, configSections, problemsTable } from './config-view.ts';
import { pausesSection } from './pauses-view.ts';

/** What config.yaml and secrets.yaml hold now, as one hash (a missing file hashes as missing). */
async function fingerprint(files: readonly string[]): Promise<string> {
  const hash = createHash('sha256');
  for (const file of files) {
    const content = await readFile(file).catch(() => undefined);
    hash.update(`${file}\0${content === undefined ? 'missing' : createHash('sha256').update(content).digest('hex')}\0`);
  }
  return hash.digest('hex');
}

/**
 * config.yaml as written, for showing the owner's own keys, units and rules: read once as the server starts (with the
 * fingerprint the "changed since" notice compares with). Secrets are not resolved: only their names are shown.
 */
async function readSource(file: string): Promise<ConfigSource | undefined> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  const { data } = readYaml({ text, file: path.basename(file), resolveSecret: () => ({ value: '' }) });
  return data !== null && typeof data === 'object' && !Array.isArray(data)
    ? { data: data as Record<string, unknown> }
    : undefined;
}

/** A path as people read it: relative to the server's working directory when it lies below it. */
function shownPath(file: string, cwd: string): string {
  const relative = path.relative(cwd, file);
  return relative.startsWith('..') || path.isAbsolute(relative) ? file : relative;
}

/**
 * The Config page `/config`: the config the server runs with, section by section (secrets by name only), the file it
 * came from and when it was loaded, and the problems the checks of `assistant config check` (the shared
 * `checkConfig`) find in the file as it is now, each with file, line and key. A file changed since the server loaded
 * it is said so: the server keeps the config it started with. Read-only.
 */
export function registerConfigPage(app: AssistantServer, context: DashboardContext): void {
  const { config } = context;
  const files = [config.paths.configFile, config.paths.secretsFile];
  // The server registers its routes right after loading the config: this is when it was loaded, and what it read.
  const loadedAt = new Date();
  const loadedPrint = fingerprint(files);
  const loadedSource = readSource(config.paths.configFile);
  // The checks import every handler module: run them again only when the files changed.
  let cached: { print: string; check: Promise<ConfigCheck> } | undefined;

  dashboardRoute(app, {
    method: 'GET',
    url: '/config',
    handler: async (request, reply) => {
      const cwd = process.cwd();
      const print = await fingerprint(files);
      if (cached?.print !== print) {
        cached = {
          print,
          check: checkConfig({ configPath: config.paths.configFile, cwd, installation }),
        };
      }
      const check = await cached.check;
      // Read at every request (a few small files): personas are read when a loop uses one, so an edit counts at once.
      const personaProblems = await checkPersonas({ config, cwd });
      const changed = print !== (await loadedPrint);
      const problems = [...check.problems, ...check.warnings];
      const errors = check.problems.length;
      const verdict =
        errors === 0
          ? html`<p class="notice ok">The file passes the checks of <code>assistant config check</code>${check.warnings.length > 0 ? html` with ${check.warnings.length} warning(s)` : ''}.</p>`
          : html`<p class="notice bad">The file as it is now has ${errors} problem(s): the server could not start with it.</p>`;
      const body = html`<dl class="stats config-source">
<div><dt>File</dt><dd><code>${shownPath(config.paths.configFile, cwd)}</code></dd></div>
<div><dt>Loaded</dt><dd>${timeTag(loadedAt.toISOString())}</dd></div>
<div><dt>Data</dt><dd><code>${shownPath(config.paths.dataDir, cwd)}</code></dd></div>
</dl>
${
  changed
    ? html`<p class="notice warn" id="config-changed">The file (or secrets.yaml) changed since the server loaded it. The server keeps the config it started with, shown below; restart it to use the new one.</p>`
    : ''
}
<section aria-labelledby="config-problems"><h2 id="config-problems">Checks</h2>
${verdict}
${problems.length > 0 ? problemsTable(problems) : ''}
${
  personaProblems.length > 0
    ? html`<p class="notice bad" id="persona-problems">The persona files have ${personaProblems.length} problem(s). The server runs; a loop naming a broken persona fails (PERSONA_INVALID) until its file is fixed (see <a href="/personas">Personas</a>).</p>
${problemsTable(personaProblems)}`
    : ''
}
</section>
${await pausesSection(request, context)}
${configSections({ config, registry: context.registry, now: new Date(), source: await loadedSource })}`;
      return sendPage(reply, { request, title: 'Config', section: 'config', body });
    },
  });
}
