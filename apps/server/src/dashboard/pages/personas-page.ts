import {
  loadPersonas,
  type Persona,
  type PersonaEntry,
  type PersonaProblem,
  personaEntries,
  personaNamed,
  personaSourcesOf,
  toolsSummary,
} from '@assistant/agents';
import { formatDuration } from '@assistant/config';
import type { AssistantServer } from '../../server-type.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute } from '../dashboard-route.ts';
import { html, type SafeHtml } from '../html.ts';
import { sendPage } from '../layout.ts';

/**
 * The Personas page: each persona (`/personas`) with where it is written, its model, grants, what it delegates, its
 * limits and its file's problems, and per persona (`/personas/<name>`) all of that with its instructions. Read from the
 * files at every request, as a loop reads them when it starts; nothing is written.
 */
export function registerPersonasPage(app: AssistantServer, context: DashboardContext): void {
  const load = () => loadPersonas(personaSourcesOf(context.config));

  dashboardRoute(app, {
    method: 'GET',
    url: '/personas',
    handler: async (request, reply) => {
      const { entries, unowned } = personaEntries(await load());
      const body = html`<p class="muted">A persona is a file <code>personas/&lt;name&gt;.md</code> beside config.yaml or in the notes: its body is who the agent is, its frontmatter what it may do (docs/agents.md, "Personas").</p>
<table class="personas">
<thead><tr><th scope="col">Persona</th><th scope="col">Source</th><th scope="col">Model</th><th scope="col">Tools</th><th scope="col">Delegable</th><th scope="col">Limits</th><th scope="col">Problems</th></tr></thead>
<tbody>${entries.map(renderRow)}</tbody>
</table>
${unowned.length === 0 ? '' : html`<section aria-labelledby="persona-files-heading"><h2 id="persona-files-heading">Files that define no persona</h2>${renderProblems(unowned)}</section>`}`;
      return sendPage(reply, { request, title: 'Personas', section: 'personas', body });
    },
  });

  dashboardRoute(app, {
    method: 'GET',
    url: '/personas/:name',
    handler: async (request, reply) => {
      const name = (request.params as { name: string }).name;
      const loaded = await load();
      const entry = personaEntries(loaded).entries.find((candidate) => candidate.name === name);
      // PERSONA_UNKNOWN (a 404 page) naming the personas there are.
      if (!entry) personaNamed({ name, loaded });
      if (!entry) return;
      const body = html`<p><a href="/personas">All personas</a></p>
<p class="muted">${entry.source}</p>
${entry.problems.length === 0 ? '' : html`<section aria-labelledby="persona-problems-heading"><h2 id="persona-problems-heading">Problems</h2>${entry.persona ? '' : html`<p class="notice bad">This persona cannot be used: a loop naming it fails (PERSONA_INVALID) until its file is fixed.</p>`}${renderProblems(entry.problems)}</section>`}
${entry.persona ? renderPersona(entry.persona) : ''}`;
      return sendPage(reply, { request, title: `Persona ${entry.name}`, section: 'personas', body });
    },
  });
}

function list(items: readonly string[]): SafeHtml {
  if (items.length === 0) return html`<span class="muted">none</span>`;
  return html`${items.map((item, index) => html`${index > 0 ? ', ' : ''}<code>${item}</code>`)}`;
}

function limits(persona: Persona): string {
  const budget = [
    `${persona.budget.maxSteps} steps`,
    ...(persona.budget.tokens === undefined ? [] : [`${persona.budget.tokens} tokens`]),
    ...(persona.budget.timeoutMs === undefined ? [] : [formatDuration(persona.budget.timeoutMs)]),
  ];
  return `depth ${persona.maxDepth}, children ${persona.maxChildren}, budget ${budget.join(', ')}`;
}

function renderRow(entry: PersonaEntry): SafeHtml {
  const { persona } = entry;
  const problems =
    entry.problems.length === 0
      ? html`<span class="muted">none</span>`
      : html`<strong class="bad">${entry.problems.length} problem(s)</strong>${persona ? '' : ' (cannot be used)'}`;
  return html`<tr>
<th scope="row"><a href="/personas/${encodeURIComponent(entry.name)}">${entry.name}</a></th>
<td>${entry.source}</td>
<td>${persona ? (persona.profile ?? html`<span class="muted">default</span>`) : ''}</td>
<td>${persona ? toolsSummary(persona) : ''}</td>
<td>${persona ? list(persona.delegable) : ''}</td>
<td>${persona ? limits(persona) : ''}</td>
<td>${problems}</td>
</tr>`;
}

function renderProblems(problems: readonly PersonaProblem[]): SafeHtml {
  return html`<ul class="problems">${problems.map(
    (problem) =>
      html`<li><code>${problem.file}${problem.line === undefined ? '' : `:${problem.line}`}</code>${problem.key && problem.key !== '(document)' ? html` <code>${problem.key}</code>` : ''}: ${problem.message}${problem.hint ? html` <span class="muted">(${problem.hint})</span>` : ''}</li>`,
  )}</ul>`;
}

function renderPersona(persona: Persona): SafeHtml {
  return html`<section aria-labelledby="persona-grants-heading">
<h2 id="persona-grants-heading">What it may do</h2>
${persona.description ? html`<p>${persona.description}</p>` : ''}
<dl>
<dt>Model</dt><dd>${persona.profile ?? html`<span class="muted">the loop's default</span>`}</dd>
<dt>Tools allowed</dt><dd>${list(persona.tools.allow)}</dd>
<dt>Tools denied</dt><dd>${list(persona.tools.deny)}</dd>
<dt>Tools that ask the owner</dt><dd>${list(persona.tools.approve)}</dd>
<dt>Delegable (what a child may receive)</dt><dd>${list(persona.delegable)}</dd>
<dt>MCP servers</dt><dd>${list(persona.mcpServers)}</dd>
<dt>Limits</dt><dd>${limits(persona)}</dd>
</dl>
</section>
<section aria-labelledby="persona-instructions-heading">
<h2 id="persona-instructions-heading">Instructions</h2>
<pre class="instructions">${persona.instructions}</pre>
</section>`;
}
