import { AssistantError } from '@assistant/errors';
import { type LedgerEvent, summarizeEventData } from '@assistant/events';
import { type CompiledHook, describeHook, dryRunHook, type HookState, readHookStates } from '@assistant/hooks';
import type { AssistantServer } from '../../server-type.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute, queryField } from '../dashboard-route.ts';
import { html, queryString, type SafeHtml } from '../html.ts';
import { sendPage, timeTag } from '../layout.ts';

/** Recent events of a hook's type offered for its dry run. */
const recentEventsOffered = 20;
const eventIdPattern = /^ev-[0-9a-f]{20}$/;

/**
 * The Hooks page: each hook's state, breaker, last firing, pending timers and missed runs (`/hooks`), and per hook
 * (`/hooks/<name>`) what it is as compiled and a dry run against a recent event of its type, chosen from a list: the
 * fast path with the value each check saw, the slow path, and each action with whether it waits for approval — the
 * explanation `assistant hooks test` prints, as the note page's Why section is `automations explain`'s. The dashboard
 * never calls the model (that costs and is `hooks test --ask`'s), and nothing runs.
 */
export function registerHooksPage(app: AssistantServer, context: DashboardContext): void {
  dashboardRoute(app, {
    method: 'GET',
    url: '/hooks',
    handler: async (request, reply) => {
      const states = await readHookStates({ dataDir: context.config.paths.dataDir, hooks: context.hooks });
      const body =
        states.length === 0
          ? html`<p>No hooks. A hook is a file in <code>hooks/</code> beside config.yaml (see docs/hooks.md).</p>`
          : html`<table class="hooks">
<thead><tr><th scope="col">Hook</th><th scope="col">On</th><th scope="col">State</th><th scope="col">Breaker</th><th scope="col">Last fired</th><th scope="col">Timers pending</th><th scope="col">Missed</th></tr></thead>
<tbody>${states.map((state) => renderStateRow(state))}</tbody>
</table>`;
      return sendPage(reply, { request, title: 'Hooks', section: 'hooks', body });
    },
  });

  dashboardRoute(app, {
    method: 'GET',
    url: '/hooks/:name',
    handler: async (request, reply) => {
      const name = (request.params as { name: string }).name;
      const hook = context.hooks.find((candidate) => candidate.name === name);
      if (!hook) throw new AssistantError('NOT_FOUND', `no hook ${JSON.stringify(name)}`);
      const [state] = await readHookStates({ dataDir: context.config.paths.dataDir, hooks: [hook] });
      const chosen = queryField(request, 'event');
      const body = html`<p><a href="/hooks">All hooks</a></p>
${state ? renderState(state) : ''}
${renderDefinition(hook)}
${await renderDryRun(context, hook, chosen)}`;
      return sendPage(reply, { request, title: `Hook ${hook.name}`, section: 'hooks', body });
    },
  });
}

function stateWord(state: HookState): string {
  if (state.firedOnce) return 'fired once';
  return state.enabled ? 'enabled' : 'disabled';
}

function breakerText(state: HookState): SafeHtml {
  if (state.breaker.state === 'closed') return html`closed`;
  return html`<strong class="bad">${state.breaker.state}</strong> after ${state.breaker.failures} errors${state.breaker.openedAt ? html`, since ${timeTag(state.breaker.openedAt)}` : ''}`;
}

function timersText(state: HookState): SafeHtml {
  if (state.timers.length === 0) return html`<span class="muted">none</span>`;
  return html`${state.timers.map((timer, index) => html`${index > 0 ? ', ' : ''}${timer.kind} due ${timeTag(timer.dueAt)}`)}`;
}

function renderStateRow(state: HookState): SafeHtml {
  return html`<tr>
<th scope="row"><a href="/hooks/${encodeURIComponent(state.name)}">${state.name}</a></th>
<td><a href="/events${queryString({ type: state.on })}"><code>${state.on}</code></a></td>
<td>${stateWord(state)}${state.once && !state.firedOnce ? ' (once)' : ''}</td>
<td>${breakerText(state)}</td>
<td>${timeTag(state.lastFiredAt)} <span class="muted">(${state.firings} firings)</span></td>
<td>${timersText(state)}</td>
<td>${state.missed}</td>
</tr>`;
}

function renderState(state: HookState): SafeHtml {
  return html`<section aria-labelledby="hook-state-heading">
<h2 id="hook-state-heading">State</h2>
<dl>
<dt>State</dt><dd>${stateWord(state)}${state.once && !state.firedOnce ? ' (once)' : ''}</dd>
<dt>Breaker</dt><dd>${breakerText(state)}</dd>
<dt>Last fired</dt><dd>${timeTag(state.lastFiredAt)} (${state.firings} firings)</dd>
<dt>Timers pending</dt><dd>${timersText(state)}</dd>
<dt>Missed runs</dt><dd>${state.missed}</dd>
</dl>
</section>`;
}

function renderDefinition(hook: CompiledHook): SafeHtml {
  const described = describeHook(hook);
  return html`<section aria-labelledby="hook-definition-heading">
<h2 id="hook-definition-heading">Definition</h2>
<p>${described.description ?? ''} <span class="muted">${described.file}:${described.line}, version ${described.version}</span></p>
<dl>
<dt>On</dt><dd><code>${described.on}</code></dd>
<dt>When (fast path)</dt><dd>${described.conditions.length === 0 ? html`<span class="muted">no conditions</span>` : html`<ul>${described.conditions.map((condition) => html`<li><code>${condition}</code></li>`)}</ul>`}</dd>
<dt>Ask (slow path)</dt><dd>${described.ask ? html`${described.ask.question}${described.ask.llm ? html` <span class="muted">(llm ${described.ask.llm})</span>` : ''}` : html`<span class="muted">none</span>`}</dd>
<dt>Provenance</dt><dd>${described.provenance}${described.approval ? ', approval required' : ''}</dd>
<dt>Then</dt><dd><ul>${described.actions.map((action) => html`<li><code>${action.summary}</code> [${action.tier.replace('_', ' ')}${action.yolo ? ', !yolo' : ''}]: ${action.needs_approval ? html`<strong>waits for approval</strong>` : 'runs without approval'}</li>`)}</ul></dd>
</dl>
</section>`;
}

async function recentEventsOf(context: DashboardContext, type: string): Promise<LedgerEvent[]> {
  const kept: LedgerEvent[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await context.events.list({ types: [type], limit: 1_000, ...(after === undefined ? {} : { after }) });
    kept.push(...page.events);
    if (kept.length > recentEventsOffered) kept.splice(0, kept.length - recentEventsOffered);
    if (!page.next) break;
    after = page.next;
  }
  return kept.reverse();
}

async function renderDryRun(
  context: DashboardContext,
  hook: CompiledHook,
  chosen: string | undefined,
): Promise<SafeHtml> {
  const recent = await recentEventsOf(context, hook.on);
  const heading = html`<h2 id="hook-why-heading">Why (a dry run)</h2>`;
  if (recent.length === 0 && chosen === undefined) {
    return html`<section class="why" aria-labelledby="hook-why-heading">${heading}<p class="muted">No ${hook.on} event in the ledger yet to try it on. <code>assistant hooks test ${hook.name} --event FILE</code> tries one written by hand.</p></section>`;
  }
  const picked = chosen !== undefined && eventIdPattern.test(chosen) ? await context.events.get(chosen) : recent[0];
  const form = html`<form method="get" action="/hooks/${encodeURIComponent(hook.name)}">
<label>Event <select name="event">${recent.map((event) => html`<option value="${event.id}"${event.id === picked?.id ? html` selected` : ''}>${event.at} ${event.id} ${summarizeEventData({ data: event.data, maxChars: 80 })}</option>`)}</select></label>
<button type="submit">Explain</button>
</form>`;
  if (!picked) {
    return html`<section class="why" aria-labelledby="hook-why-heading">${heading}${form}<p class="notice bad">No event ${chosen ?? ''} in the ledger.</p></section>`;
  }
  const { cursor: _cursor, ...event } = picked;
  const run = await dryRunHook({ hook, event });
  const { decision } = run;
  const slowPath =
    run.slowPath === 'none'
      ? html`none (the hook has no <code>ask:</code>)`
      : run.slowPath === 'not reached'
        ? html`not reached: the fast path failed`
        : html`not asked: the dashboard does not call the model; <code>assistant hooks test ${hook.name} --event ${event.id} --ask</code> does`;
  return html`<section class="why" aria-labelledby="hook-why-heading">
${heading}
${form}
<p>Against <a href="/events/${event.id}">${event.id}</a> (${timeTag(event.at)})${event.problem === undefined ? '' : html`, which has a <strong class="bad">problem: ${event.problem}</strong>`}:
<strong>${decision.fire ? 'it fires' : 'it does not fire'}</strong> — ${decision.reason}</p>
<h3>Fast path: ${decision.fastPath.passed ? 'passed' : 'failed'}</h3>
<ul class="why-conditions">${decision.fastPath.checks.map((check) => html`<li class="${check.passed ? 'holds' : 'fails'}">${check.passed ? 'holds' : 'fails'}: <code>${check.text}</code>, saw <code>${JSON.stringify(check.value) ?? 'nothing'}</code></li>`)}</ul>
<h3>Slow path</h3>
<p>${slowPath}</p>
<h3>Actions</h3>
<ul>${decision.actions.map((entry) => html`<li><code>${entry.summary}</code> [${entry.action.tier.replace('_', ' ')}${entry.action.yolo ? ', !yolo' : ''}]: ${entry.needsApproval ? html`<strong>waits for approval</strong>` : 'runs without approval'}</li>`)}</ul>
<p class="muted">A dry run: nothing was enqueued, recorded or fired.</p>
</section>`;
}
