import {
  describeOutcome,
  describeSeen,
  type ExplainedRule,
  explainItem,
  type ItemExplanation,
  itemOf,
} from '@assistant/actions';
import type { DashboardContext } from './dashboard-context.ts';
import { html, type SafeHtml } from './html.ts';
import { timeTag } from './layout.ts';

/**
 * The "Why" section of an item's note page: each automation of the item's platform with whether it matched and why
 * (each condition with the value it saw), the provenance and tier of each action, and what was done or is waiting;
 * the same explanation `assistant automations explain NOTE` prints (both are `explainItem` from @assistant/actions).
 * Undefined when the note is not an item of a platform (a chat, an approval, a hand-written note) or does not exist.
 */
export async function renderWhy(context: DashboardContext, notePath: string): Promise<SafeHtml | undefined> {
  const registry = context.registry;
  if (!registry) return undefined;
  let data: Record<string, unknown>;
  try {
    const note = await context.notes.read(notePath);
    if (!note) return undefined;
    data = note.data as Record<string, unknown>;
  } catch {
    // A path the notes refuse or a broken note: the note page says what is wrong with it.
    return undefined;
  }
  const options = { registry, config: context.config };
  const ref = itemOf(options, notePath, data);
  if ('notItem' in ref) {
    // Under an instance's folder but of several platforms: say so rather than guess.
    if (ref.notItem.includes('say which')) return whySection(html`<p class="notice">${ref.notItem}</p>`);
    return undefined;
  }
  try {
    return renderExplanation(await explainItem({ ...options, notes: context.notes, notePath }));
  } catch (error) {
    return whySection(
      html`<p class="notice bad">The explanation failed: ${error instanceof Error ? error.message : String(error)}</p>`,
    );
  }
}

function whySection(body: SafeHtml): SafeHtml {
  return html`<section class="why" aria-labelledby="why-heading">
<h2 id="why-heading">Why</h2>
${body}
</section>`;
}

/** The explanation as HTML: every value from the note (subjects, senders, classifications) is escaped text. */
function renderExplanation(explained: ItemExplanation): SafeHtml {
  const from = explained.rulesFrom === 'config' ? 'config.yaml' : `${explained.rulesFrom.file} (a dry run)`;
  const rules =
    explained.rules.length === 0
      ? html`<p>${explained.instance}/${explained.platform} has no automations: nothing is decided for this item.</p>`
      : html`<ol class="why-rules">${explained.rules.map((rule) => renderRule(rule))}</ol>`;
  const done =
    explained.taken.length === 0 && explained.started.length === 0
      ? html`<p class="muted">Nothing recorded on the item.</p>`
      : html`<ul>${explained.taken.map(
          (entry) =>
            html`<li><code>${entry.action}</code>${entry.rule ? html` by rule “${entry.rule}”` : ''}${entry.provenance ? ` (${entry.provenance})` : ''}${entry.at ? html` at ${timeTag(entry.at)}` : ''}${entry.task ? html`, task <a href="/tasks/${encodeURIComponent(entry.task)}">${entry.task}</a>` : ''}${entry.approval ? html`, approved in ${approvalLink(entry.approval)}` : ''}</li>`,
        )}${explained.started.map(
          (entry) =>
            html`<li>started <code>${entry.action}</code>${entry.at ? html` at ${timeTag(entry.at)}` : ''}</li>`,
        )}</ul>`;
  const approvals =
    explained.approvals.length === 0
      ? html`<p class="muted">No approval request for this item.</p>`
      : html`<ul>${explained.approvals.map(
          (request) =>
            html`<li>${approvalLink(request.id)}: <strong>${request.status}</strong> (rule “${request.rule}”)${request.status === 'pending' ? html`, expires ${timeTag(request.expires_at)}` : request.decided_by ? ` by ${request.decided_by}` : ''}</li>`,
        )}</ul>`;
  return whySection(html`<p>An item of <strong>${explained.instance}/${explained.platform}</strong> (${explained.domain}); rules from ${from}, evaluated at ${timeTag(explained.evaluatedAt)}. The same explanation: <code>assistant automations explain ${explained.item}</code>.</p>
<h3>Automations</h3>
${rules}
<h3>Done</h3>
${done}
<h3>Approvals</h3>
${approvals}`);
}

function approvalLink(id: string): SafeHtml {
  return html`<a href="/approvals?status=all#${id}">${id}</a>`;
}

function renderRule(rule: ExplainedRule): SafeHtml {
  const verdict = rule.paused
    ? html`<strong class="warn">paused</strong> <span class="muted">(${rule.paused}): not applied</span>`
    : rule.stoppedBy !== undefined
      ? html`<strong>not evaluated</strong>: rule “${rule.stoppedBy}” held and has <code>stop: true</code>`
      : rule.match
        ? html`<strong class="ok">matched</strong>`
        : rule.conditionsHold
          ? html`<strong class="warn">conditions hold, but the gate allows none of its actions</strong>`
          : html`<strong>not matched</strong>`;
  const conditions = html`<table class="why-conditions">
<caption class="visually-hidden">Conditions of “${rule.name}”</caption>
<thead><tr><th scope="col">Condition</th><th scope="col">Value seen</th><th scope="col">Holds</th></tr></thead>
<tbody>${rule.conditions.map(
    (condition) =>
      html`<tr><th scope="row">${condition.group ? html`<span class="muted">${condition.group}:</span> ` : ''}<code>${condition.text}</code> <span class="muted">(${condition.subject})</span></th><td>${describeSeen(condition)}</td><td>${condition.holds ? html`<span class="ok">yes</span>` : html`<span class="bad">no</span>`}</td></tr>`,
  )}</tbody>
</table>`;
  const actions = html`<ul class="why-actions">${rule.actions.map(
    (action) =>
      html`<li><code>${action.action.key}</code> <span class="tier tier-${action.action.tier}">${action.action.tier.replace('_', ' ')}</span>${action.action.yolo ? html` <span class="tier">!yolo</span>` : ''}: ${action.gate}; <em>${describeOutcome(action.outcome, rule.name)}</em></li>`,
  )}</ul>`;
  return html`<li class="why-rule${rule.match ? ' matched' : ''}">
<h4>“${rule.name}”: ${verdict} <span class="muted">(${rule.provenance} provenance${rule.approval ? ', approval required' : ''}${rule.stop ? ', stop: true' : ''})</span></h4>
${conditions}
${actions}
</li>`;
}
