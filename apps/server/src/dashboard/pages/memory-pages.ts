import { AssistantError } from '@assistant/errors';
import { type Contact, dueStanding, type MemoryProblem, type OwnerTask, tasksDue } from '@assistant/memory';
import type { FastifyRequest } from 'fastify';
import {
  checkContactSlug,
  checkDue,
  contactDetail,
  contactNamed,
  type FactView,
  ownerTaskNamed,
} from '../../memory/owner-memory.ts';
import type { AssistantServer } from '../../server-type.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute, formField, redirectAfterPost } from '../dashboard-route.ts';
import { html, type SafeHtml } from '../html.ts';
import { type ItemSubject, itemSubjects, renderItemSubject } from '../item-subjects.ts';
import { csrfField, sendPage } from '../layout.ts';
import { notePageUrl } from '../markdown.ts';

// The Contacts and My tasks pages (docs/dashboard.md): memory as the owner reads it. Every write is a form post
// through dashboardRoute, so it takes the login cookie only with the CSRF token and a same-origin request.

function list(items: readonly string[]): SafeHtml {
  if (items.length === 0) return html`<span class="muted">none</span>`;
  return html`${items.map((item, index) => html`${index > 0 ? ', ' : ''}${item}`)}`;
}

function handles(contact: Contact): string[] {
  return Object.entries(contact.handles).flatMap(([platform, values]) =>
    values.map((value) => `${platform}: ${value}`),
  );
}

/** A note's page; a source such as `chats/<id>.md#<message>` links to the message in it. */
function noteHref(source: string): string {
  const [notePath = '', fragment] = source.split('#', 2);
  return `${notePageUrl(notePath)}${fragment ? `#${encodeURIComponent(fragment)}` : ''}`;
}

function noteLink(notePath: string): SafeHtml {
  return html`<a href="${noteHref(notePath)}"><code>${notePath}</code></a>`;
}

/** An item by its subject and sender (mail, GitHub), else by its path. */
function itemLine(source: string, subject: ItemSubject | undefined): SafeHtml {
  if (!subject?.subject) return html`<li>${noteLink(source)}</li>`;
  return html`<li>${renderItemSubject({ ...subject, notePath: source.split('#')[0] ?? source })} <span class="muted"><code>${source}</code></span></li>`;
}

function contactLink(slug: string): SafeHtml {
  return html`<a href="/contacts/${encodeURIComponent(slug)}">${slug}</a>`;
}

/** What a task or fact is about: a contact links to its page, a topic is its word. */
function aboutLinks(about: readonly string[]): SafeHtml {
  return html`${about.map(
    (subject, index) =>
      html`${index > 0 ? ', ' : ''}${subject.startsWith('contact:') ? contactLink(subject.slice('contact:'.length)) : subject.replace(/^topic:/, '')}`,
  )}`;
}

function renderProblems(problems: readonly MemoryProblem[]): SafeHtml | string {
  if (problems.length === 0) return '';
  return html`<section aria-labelledby="memory-problems-heading"><h2 id="memory-problems-heading">Notes that could not be read</h2>
<p class="muted">Skipped, never rewritten: fix them in your editor.</p>
<ul class="problems">${problems.map((problem) => html`<li>${noteLink(problem.path)}: ${problem.message}</li>`)}</ul></section>`;
}

function renderFact(view: FactView): SafeHtml {
  const { fact } = view;
  const statement = view.supersededBy
    ? html`<del>${fact.statement}</del> <span class="muted">superseded by</span> <a href="#fact-${view.supersededBy}">${view.supersededBy}</a>`
    : html`${fact.statement}`;
  return html`<li id="fact-${fact.id}">${statement} <span class="muted">(${fact.trust === 'owner' ? 'yours' : 'extracted'}, ${fact.observed_at.slice(0, 10)}, from ${fact.source === 'owner' ? 'you' : noteLink(fact.source)})</span></li>`;
}

function standingLabel(task: OwnerTask, context: DashboardContext, nowMs: number): SafeHtml {
  const standing = dueStanding(task, { nowMs, timeZone: context.config.owner.timeZone });
  if (standing === 'none') return html`<span class="muted">no date</span>`;
  const due = html`<time datetime="${task.due ?? ''}">${task.due ?? ''}</time>`;
  if (standing === 'overdue') return html`<strong class="bad">overdue</strong> ${due}`;
  if (standing === 'today') return html`<strong>today</strong> ${due}`;
  return due;
}

/** One owner's task as a row, with its Done button when it is open. */
function renderOwnerTaskRow(
  request: FastifyRequest,
  context: DashboardContext,
  task: OwnerTask,
  nowMs: number,
): SafeHtml {
  return html`<tr>
<td>${standingLabel(task, context, nowMs)}</td>
<th scope="row">${task.title}</th>
<td>${task.about.length === 0 ? html`<span class="muted">—</span>` : aboutLinks(task.about)}</td>
<td>${task.created_by === 'extraction' ? html`extracted${task.source ? html` from ${noteLink(task.source)}` : ''}` : task.created_by === 'chat' ? 'chat' : 'you'}</td>
<td>${noteLink(task.path)}</td>
<td>${task.status === 'open' ? html`<form method="post" action="/my-tasks/${encodeURIComponent(task.id)}/done">${csrfField(request)}<button type="submit">Done</button></form>` : task.status}</td>
</tr>`;
}

export function registerMemoryPages(app: AssistantServer, context: DashboardContext): void {
  const log = (message: string, link: string) => context.humanLog.write({ source: 'dashboard', message, link });

  dashboardRoute(app, {
    method: 'GET',
    url: '/contacts',
    handler: async (request, reply) => {
      const { contacts, problems } = await context.memory.stores.contacts.list();
      const sorted = [...contacts].sort((a, b) => a.name.localeCompare(b.name));
      const body = html`<p class="muted">Each contact is a note <code>contacts/&lt;slug&gt;.md</code>: edit it in your editor and the edit wins over what extraction reads from mail, chat and GitHub (docs/memory.md).</p>
${
  sorted.length === 0
    ? html`<p class="muted">No contacts yet.</p>`
    : html`<table class="contacts">
<thead><tr><th scope="col">Name</th><th scope="col">Organisation</th><th scope="col">Addresses</th><th scope="col">Handles</th><th scope="col">Items</th><th scope="col">Merged</th></tr></thead>
<tbody>${sorted.map(
        (contact) => html`<tr>
<th scope="row"><a href="/contacts/${encodeURIComponent(contact.slug)}">${contact.name}</a></th>
<td>${contact.organisation ?? ''}</td>
<td>${list(contact.emails)}</td>
<td>${list(handles(contact))}</td>
<td>${contact.sources.length}</td>
<td>${contact.merged_into ? html`into ${contactLink(contact.merged_into)}` : contact.merged_from.length > 0 ? html`with ${contact.merged_from.map((slug, index) => html`${index > 0 ? ', ' : ''}${contactLink(slug)}`)}` : ''}</td>
</tr>`,
      )}</tbody></table>`
}
${renderProblems(problems)}`;
      return sendPage(reply, { request, title: 'Contacts', section: 'contacts', body });
    },
  });

  dashboardRoute(app, {
    method: 'GET',
    url: '/contacts/:slug',
    handler: async (request, reply) => {
      const slug = checkContactSlug((request.params as { slug: string }).slug);
      const detail = await contactDetail({ stores: context.memory.stores, slug });
      const { contact } = detail;
      const { contacts } = await context.memory.stores.contacts.list();
      const subjects = await itemSubjects(context).lookup(detail.items.map((item) => item.split('#')[0] ?? item));
      const mergeable = contacts
        .filter((other) => other.slug !== contact.slug && other.merged_into === undefined)
        .sort((a, b) => a.name.localeCompare(b.name));
      const body = html`<p><a href="/contacts">All contacts</a> · ${noteLink(contact.path)}</p>
${
  detail.primary
    ? html`<form method="post" action="/contacts/${encodeURIComponent(contact.slug)}/unmerge" class="notice">${csrfField(request)}Merged into <a href="/contacts/${encodeURIComponent(detail.primary.slug)}">${detail.primary.name}</a>: lookups find them. <button type="submit" class="secondary">Unmerge</button></form>`
    : contact.merged_into
      ? html`<p class="notice bad">Merged into <code>${contact.merged_into}</code>, which has no note.</p>`
      : ''
}
<section aria-labelledby="contact-identity-heading"><h2 id="contact-identity-heading">Identity</h2>
<dl>
<dt>Name</dt><dd>${contact.name}</dd>
<dt>Also known as</dt><dd>${list(contact.aliases)}</dd>
<dt>Addresses</dt><dd>${list(contact.emails)}</dd>
<dt>Handles</dt><dd>${list(handles(contact))}</dd>
<dt>Organisation</dt><dd>${contact.organisation ?? html`<span class="muted">—</span>`}</dd>
<dt>Relationships</dt><dd>${contact.relationships.length === 0 ? html`<span class="muted">none</span>` : contact.relationships.map((relation, index) => html`${index > 0 ? ', ' : ''}${relation.kind} of ${contactLink(relation.contact)}`)}</dd>
<dt>Created by</dt><dd>${contact.created_by === 'owner' ? 'you' : 'extraction'}</dd>
</dl>
${contact.body.trim() === '' ? '' : html`<pre class="instructions">${contact.body}</pre>`}
</section>
<section aria-labelledby="contact-observed-heading"><h2 id="contact-observed-heading">Observed identifiers</h2>
${
  contact.observed.length === 0
    ? html`<p class="muted">None: extraction has seen no other address, handle or name for them.</p>`
    : html`<table><thead><tr><th scope="col">Kind</th><th scope="col">Value</th><th scope="col">Seen in</th></tr></thead><tbody>${contact.observed.map(
        (seen) =>
          html`<tr><td>${seen.kind}${seen.platform ? ` (${seen.platform})` : ''}</td><td><code>${seen.value}</code></td><td>${noteLink(seen.source)}</td></tr>`,
      )}</tbody></table>`
}
</section>
<section aria-labelledby="contact-facts-heading"><h2 id="contact-facts-heading">Facts about them</h2>
${detail.facts.length === 0 ? html`<p class="muted">None yet.</p>` : html`<ul class="facts">${detail.facts.map(renderFact)}</ul>`}
</section>
<section aria-labelledby="contact-items-heading"><h2 id="contact-items-heading">Items they appear in</h2>
${detail.items.length === 0 ? html`<p class="muted">None.</p>` : html`<ul class="plain">${detail.items.map((item) => itemLine(item, subjects.get(item.split('#')[0] ?? item)))}</ul>`}
</section>
<section aria-labelledby="contact-merge-heading"><h2 id="contact-merge-heading">Merged contacts</h2>
${
  detail.mergedFrom.length === 0
    ? html`<p class="muted">No contact is merged into this one.</p>`
    : html`<ul class="plain">${detail.mergedFrom.map(
        (merged) =>
          html`<li><form method="post" action="/contacts/${encodeURIComponent(merged.slug)}/unmerge">${csrfField(request)}<a href="/contacts/${encodeURIComponent(merged.slug)}">${merged.name}</a> <code>${merged.slug}</code> <button type="submit" class="secondary">Unmerge</button></form></li>`,
      )}</ul>`
}
${
  contact.merged_into === undefined && mergeable.length > 0
    ? html`<form method="post" action="/contacts/merge">${csrfField(request)}<input type="hidden" name="into" value="${contact.slug}">
<label>Merge into this one: <select name="from">${mergeable.map((other) => html`<option value="${other.slug}">${other.name} (${other.slug})</option>`)}</select></label>
<button type="submit">Merge</button> <span class="muted">Reversible: both notes are kept.</span></form>`
    : ''
}
</section>
${renderProblems(detail.problems)}`;
      return sendPage(reply, { request, title: contact.name, section: 'contacts', body });
    },
  });

  dashboardRoute(app, {
    method: 'POST',
    url: '/contacts/merge',
    handler: async (request, reply) => {
      const into = checkContactSlug(formField(request, 'into') ?? '');
      const from = checkContactSlug(formField(request, 'from') ?? '');
      if (into === from) throw new AssistantError('BAD_REQUEST', `cannot merge ${into} into itself`);
      await Promise.all([contactNamed(context.memory.stores, into), contactNamed(context.memory.stores, from)]);
      const merged = await context.memory.stores.contacts.merge({ into, from });
      await Promise.all([context.memory.refresh(merged.into.path), context.memory.refresh(merged.from.path)]);
      await log(`merged contact ${from} into ${into}`, merged.into.path);
      return redirectAfterPost(request, reply, `/contacts/${encodeURIComponent(into)}`);
    },
  });

  dashboardRoute(app, {
    method: 'POST',
    url: '/contacts/:slug/unmerge',
    handler: async (request, reply) => {
      const slug = checkContactSlug((request.params as { slug: string }).slug);
      const before = await contactNamed(context.memory.stores, slug);
      await context.memory.stores.contacts.unmerge({ slug });
      await context.memory.refresh(before.path);
      if (before.merged_into !== undefined) await context.memory.refresh(`contacts/${before.merged_into}.md`);
      await log(`unmerged contact ${slug}${before.merged_into ? ` from ${before.merged_into}` : ''}`, before.path);
      return redirectAfterPost(request, reply, `/contacts/${encodeURIComponent(slug)}`);
    },
  });

  dashboardRoute(app, {
    method: 'GET',
    url: '/my-tasks',
    handler: async (request, reply) => {
      const nowMs = Date.now();
      const { tasks, problems } = await context.memory.stores.tasks.list({ status: 'open' });
      const open = tasksDue({ tasks, due: 'all', nowMs, timeZone: context.config.owner.timeZone });
      const body = html`<p class="muted">Your follow-ups and to-dos: notes <code>tasks/&lt;id&gt;.md</code> you write, chat adds, or extraction finds in mail and GitHub. Not the queue's tasks (those are on <a href="/tasks">Tasks</a>).</p>
<form method="post" action="/my-tasks">${csrfField(request)}<label>Task <input name="title" required maxlength="300"></label> <label>Due <input name="due" type="date"></label> <button type="submit">Add</button></form>
${
  open.length === 0
    ? html`<p class="notice ok">Nothing open.</p>`
    : html`<table class="owner-tasks">
<thead><tr><th scope="col">Due</th><th scope="col">Task</th><th scope="col">About</th><th scope="col">From</th><th scope="col">Note</th><th scope="col"></th></tr></thead>
<tbody>${open.map((task) => renderOwnerTaskRow(request, context, task, nowMs))}</tbody></table>`
}
${renderProblems(problems)}`;
      return sendPage(reply, { request, title: 'My tasks', section: 'my-tasks', body });
    },
  });

  dashboardRoute(app, {
    method: 'POST',
    url: '/my-tasks',
    handler: async (request, reply) => {
      const title = (formField(request, 'title') ?? '').trim();
      if (title === '' || title.length > 300) {
        throw new AssistantError('BAD_REQUEST', 'a task needs a title of 1 to 300 characters');
      }
      const due = formField(request, 'due') ?? '';
      const task = await context.memory.stores.tasks.add({
        title,
        createdBy: 'owner',
        source: 'owner',
        ...(due === '' ? {} : { due: checkDue(due) }),
      });
      await context.memory.refresh(task.path);
      await log(`added task of yours: ${title.slice(0, 120)}${due === '' ? '' : ` (due ${due})`}`, task.path);
      return redirectAfterPost(request, reply, '/my-tasks');
    },
  });

  dashboardRoute(app, {
    method: 'POST',
    url: '/my-tasks/:id/done',
    handler: async (request, reply) => {
      const task = await ownerTaskNamed(context.memory.stores, (request.params as { id: string }).id);
      await context.memory.stores.tasks.update(task.id, { status: 'done' });
      await context.memory.refresh(task.path);
      await log(`done: ${task.title.slice(0, 120)}`, task.path);
      return redirectAfterPost(request, reply, '/my-tasks');
    },
  });
}
