import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { memo, mustShow, writeSurfaceApprovals } from '@assistant/actions/testing';
import type { ChatEvent, ChatMessage } from '@assistant/chat';
import { FileNoteStore } from '@assistant/notes';
import { describe, expect, it } from 'vitest';
import { html } from '../html.ts';
import {
  approvalIdsIn,
  foldChatEvent,
  idleTurn,
  mentionedApprovals,
  openTurn,
  renderApproval,
  renderLiveTurn,
  renderMessage,
  transcriptWindow,
} from './chat-view.ts';

const at = '2026-11-23T18:00:00.000Z';
const event = (type: ChatEvent['type'], fields: Record<string, unknown> = {}): ChatEvent => ({ type, at, ...fields });
const csrf = html`<input type="hidden" name="_csrf" value="t">`;

describe('chat view', () => {
  it("shows what an approval will do in full on its card: a 5,000-character argument, a service's inputs (issue 30)", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-chat-card-'));
    try {
      const { toolCall, service } = await writeSurfaceApprovals(new FileNoteStore({ root: dir }));
      const escaped = (text: string) =>
        text
          .replaceAll('&', '&amp;')
          .replaceAll('<', '&lt;')
          .replaceAll('>', '&gt;')
          .replaceAll('"', '&quot;')
          .replaceAll("'", '&#39;');
      const cards = [toolCall, service]
        .map((approval) => renderApproval({ id: approval.id, state: 'found', approval }, csrf).toString())
        .join('\n');
      expect(cards).toContain(escaped(JSON.stringify(memo)));
      for (const line of mustShow) expect(cards).toContain(escaped(line));
      expect(cards).toContain(`<pre>${escaped(toolCall.rendering ?? '')}</pre>`);
      // Announced by an event (pushed live): its rendering as the event carries it.
      const pushed = renderApproval(
        { id: service.id, state: 'announced', title: 't', summary: 's', rendering: service.rendering ?? '' },
        undefined,
      ).toString();
      for (const line of mustShow.slice(1)) expect(pushed).toContain(escaped(line));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('renders message text, tool steps and approval titles as text', () => {
    const message: ChatMessage = {
      id: 'm1',
      role: 'assistant',
      text: '<script>alert(1)</script> "><img src=x onerror=alert(2)> see ap-0123456789ab',
      at,
      status: 'complete',
      steps: [{ tool: 'read_note', summary: '<b>x</b>' }],
    };
    const views = new Map([
      ['ap-0123456789ab', { id: 'ap-0123456789ab', state: 'announced' as const, title: '<i>t</i>', summary: '' }],
    ]);
    const out = renderMessage(message, views, csrf).toString();
    expect(out).not.toContain('<script>');
    expect(out).not.toContain('<img');
    expect(out).not.toContain('<b>x</b>');
    expect(out).not.toContain('<i>t</i>');
    expect(out).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(out).toContain('action="/approvals/ap-0123456789ab"');
    expect(out).toContain('name="decision" value="approve"');
    expect(out).toContain('name="_csrf"');
  });

  it('posts pushed approval buttons with htmx (the header carries the CSRF token) and keeps plain forms otherwise', () => {
    const view = { id: 'ap-0123456789ab', state: 'announced' as const, title: 't', summary: 's' };
    expect(renderApproval(view, undefined).toString()).toContain('hx-post="/approvals/ap-0123456789ab"');
    expect(renderApproval(view, csrf).toString()).not.toContain('hx-post');
  });

  it('cuts a very long message and says how much the note holds', () => {
    const message: ChatMessage = { id: 'm', role: 'user', text: 'x'.repeat(10_000), at, status: 'received' };
    expect(renderMessage(message, new Map(), csrf).toString()).toContain('4000 more characters in the note');
  });

  it('finds approval ids once each, newest message first, within the limit', () => {
    expect(approvalIdsIn('ap-0123456789ab and ap-0123456789ab, not ap-123')).toEqual(['ap-0123456789ab']);
    const messages: ChatMessage[] = [
      { id: 'a', role: 'assistant', text: 'ap-aaaaaaaaaaaa', at, status: 'complete' },
      {
        id: 'b',
        role: 'assistant',
        text: 'none',
        at,
        status: 'complete',
        steps: [{ tool: 'propose', summary: '→ ap-bbbbbbbbbbbb' }],
      },
    ];
    expect(mentionedApprovals(messages)).toEqual(['ap-bbbbbbbbbbbb', 'ap-aaaaaaaaaaaa']);
    expect(mentionedApprovals(messages, 1)).toEqual(['ap-bbbbbbbbbbbb']);
  });

  it('pages the transcript from its end', () => {
    expect(transcriptWindow(120, undefined)).toEqual({ start: 70, end: 120 });
    expect(transcriptWindow(120, 70)).toEqual({ start: 20, end: 70 });
    expect(transcriptWindow(10, 500)).toEqual({ start: 0, end: 10 });
  });

  it('folds a turn: tokens, a restart, steps, a question answered by the next message, the end', () => {
    let state = foldChatEvent(idleTurn, event('turn_started', { turn: 't1' })).state;
    state = foldChatEvent(state, event('token', { text: 'Hel' })).state;
    state = foldChatEvent(state, event('token', { text: '', restart: true })).state;
    state = foldChatEvent(state, event('token', { text: 'Hi <b>' })).state;
    state = foldChatEvent(state, event('step', { tool: 'ask_owner', status: 'started' })).state;
    state = foldChatEvent(state, event('clarification', { id: 'q1', question: 'Which <one>?' })).state;
    expect(state).toMatchObject({ open: true, text: 'Hi <b>', clarification: { question: 'Which <one>?' } });
    const live = renderLiveTurn(state, undefined).toString();
    expect(live).toContain('Hi &lt;b&gt;');
    expect(live).toContain('Which &lt;one&gt;?');
    expect(live).toContain('waiting for your answer');
    const answered = foldChatEvent(state, event('message', { message: { role: 'user', text: 'this' } }));
    expect(answered.refresh).toBe(true);
    expect(answered.state.clarification).toBeUndefined();
    const done = foldChatEvent(answered.state, event('turn_done', { reply: 'm2' }));
    expect(done).toEqual({ state: idleTurn, refresh: true });
    expect(renderLiveTurn(done.state, undefined).toString()).toBe('');
  });

  it('finds the turn still open at the end of the log, or none', () => {
    const finished = [event('turn_started', { turn: 't1' }), event('token', { text: 'a' }), event('turn_done')];
    expect(openTurn(finished)).toEqual(idleTurn);
    const open = [...finished, event('turn_started', { turn: 't2' }), event('token', { text: 'b' })];
    expect(openTurn(open)).toMatchObject({ open: true, turn: 't2', text: 'b' });
    expect(openTurn([...finished, event('error', { message: 'model down' })])).toMatchObject({
      open: false,
      error: 'model down',
    });
  });
});
