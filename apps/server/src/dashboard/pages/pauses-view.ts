import { AssistantError } from '@assistant/errors';
import { type IntegrationRegistry, resolvePauseTarget } from '@assistant/integration-host';
import {
  BrokenNoteError,
  describePause,
  type PauseKind,
  type PauseState,
  PauseStore,
  pauseKinds,
  rulePauseName,
} from '@assistant/notes';
import type { FastifyRequest } from 'fastify';
import type { AssistantServer } from '../../server-type.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute, formField, redirectAfterPost } from '../dashboard-route.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField, timeTag } from '../layout.ts';

/** Where the Config page shows the pauses, and where a pause or resume returns to. */
const sectionUrl = '/config#paused';

/**
 * The Config page's "Paused" section: what is paused (each with who, when, why and a Resume button), and a form to
 * pause an instance, a rule or a schedule. Both post plain forms with the CSRF token (the pages that carry it are
 * served only with the origin key, decision 0023), through the same pause note as the CLI and the API.
 */
export async function pausesSection(request: FastifyRequest, context: DashboardContext): Promise<SafeHtml> {
  const state: PauseState = await new PauseStore({ notes: context.notes })
    .read()
    .catch((error: unknown) => ({ entries: [], problems: [], broken: String(error) }));
  const csrf = csrfField(request);
  const rows = state.entries.map(
    (entry) =>
      html`<tr class="paused"><td><span class="tier">paused</span> ${entry.kind}</td><th scope="row"><code>${entry.name}</code></th><td>${entry.by ?? html`<span class="muted">—</span>`}</td><td>${timeTag(entry.at)}</td><td>${entry.reason ?? html`<span class="muted">—</span>`}</td><td><form method="post" action="/pauses/resume">${csrf}<input type="hidden" name="target" value="${entry.kind}:${entry.name}"><button type="submit" class="secondary">Resume<span class="visually-hidden"> ${entry.kind} ${entry.name}</span></button></form></td></tr>`,
  );
  const table =
    state.entries.length === 0
      ? html`<p id="paused-none">Nothing is paused.</p>`
      : html`<table class="paused-list"><caption class="visually-hidden">What is paused</caption>
<thead><tr><th scope="col">Kind</th><th scope="col">Name</th><th scope="col">By</th><th scope="col">Since</th><th scope="col">Reason</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
<tbody>${rows}</tbody></table>`;
  const problems = [
    ...(state.broken ? [`${state.broken}: nothing is treated as paused until it is fixed; it is not overwritten`] : []),
    ...state.problems,
  ];
  const choices = targets(context.registry).filter(
    (choice) => !state.entries.some((entry) => entry.kind === choice.kind && entry.name === choice.name),
  );
  const form =
    choices.length === 0
      ? ''
      : html`<form method="post" action="/pauses" class="toolbar" aria-label="Pause an instance, a rule or a schedule">${csrf}
<label for="pause-target">What to pause<select id="pause-target" name="target" required>${choices.map((choice) => html`<option value="${choice.kind}:${choice.name}">${choice.kind}: ${choice.name}</option>`)}</select></label>
<label for="pause-reason">Reason (optional)<input id="pause-reason" name="reason" type="text" maxlength="500"></label>
<button type="submit">Pause</button></form>`;
  return html`<section aria-labelledby="paused"><h2 id="paused">Paused</h2>
<p class="muted">A paused instance's schedule does not fire and its tasks wait in pending/; a paused rule is applied to no item; a paused schedule does not fire. Kept in <code>notes/system/paused.md</code>, also by <code>assistant pause</code>.</p>
${problems.map((problem) => html`<p class="notice warn">notes/${problem}</p>`)}
${table}
${form}
</section>`;
}

/** Every instance, rule and schedule of the config, as the pause form offers them. */
function targets(registry: IntegrationRegistry | undefined): { kind: PauseKind; name: string }[] {
  if (!registry) return [];
  const instances = registry.instances();
  return [
    ...instances.map((instance) => ({ kind: 'instance' as const, name: instance.name })),
    ...instances.flatMap((instance) =>
      Object.keys(instance.platforms).flatMap((platform) =>
        registry.automations(instance.name, platform).map((rule) => ({
          kind: 'rule' as const,
          name: rulePauseName({ instance: instance.name, platform, rule: rule.name }),
        })),
      ),
    ),
    ...registry.scheduledInstances().map((job) => ({ kind: 'schedule' as const, name: job.instance.name })),
  ];
}

/** `instance:mail` from the form, checked against the config. */
function formTarget(request: FastifyRequest): { kind: PauseKind; name: string } {
  const value = formField(request, 'target') ?? '';
  const separator = value.indexOf(':');
  const kind = value.slice(0, separator);
  const name = value.slice(separator + 1);
  if (separator < 0 || !(pauseKinds as readonly string[]).includes(kind) || name === '') {
    throw new AssistantError(
      'BAD_REQUEST',
      `expected \`target\` as kind:name (instance, rule or schedule), got \`${value}\``,
    );
  }
  return { kind: kind as PauseKind, name };
}

/** `POST /pauses` and `POST /pauses/resume`: the Config page's forms. */
export function registerPauseActions(app: AssistantServer, context: DashboardContext): void {
  const pauses = new PauseStore({ notes: context.notes });
  const conflict = (error: unknown): never => {
    if (error instanceof BrokenNoteError) {
      throw new AssistantError('CONFLICT', `notes/${error.message}`, {
        hint: 'the pause note does not parse; fix it by hand, then try again',
      });
    }
    throw error;
  };
  dashboardRoute(app, {
    method: 'POST',
    url: '/pauses',
    handler: async (request, reply) => {
      const target = formTarget(request);
      if (!context.registry) throw new AssistantError('UNAVAILABLE', 'this server runs without integrations');
      const resolved = resolvePauseTarget({ registry: context.registry, ...target });
      if (!resolved.ok) throw new AssistantError('NOT_FOUND', resolved.problem, { hint: resolved.hint });
      const reason = formField(request, 'reason')?.trim();
      const result = await pauses
        .pause({ kind: target.kind, name: resolved.name, by: 'dashboard', reason: reason || undefined })
        .catch(conflict);
      if (!result.already) {
        await context.humanLog.write({
          source: 'dashboard',
          message: `paused ${target.kind} ${resolved.name}`,
          reason: describePause(result.entry),
        });
      }
      return redirectAfterPost(request, reply, sectionUrl);
    },
  });
  dashboardRoute(app, {
    method: 'POST',
    url: '/pauses/resume',
    handler: async (request, reply) => {
      const target = formTarget(request);
      const resumed = await pauses.resume(target).catch(conflict);
      if (resumed) {
        await context.humanLog.write({ source: 'dashboard', message: `resumed ${target.kind} ${target.name}` });
      }
      return redirectAfterPost(request, reply, sectionUrl);
    },
  });
}
