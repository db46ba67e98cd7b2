// Two pending approval requests every surface must show in full (issue 30): a tool call whose 5,000-character
// argument hides where it goes in its last line, and a service call whose inputs (repository, title, body) the model
// chose. Written as the gate and `proposeAction` write them: rendered and bound.

import type { NoteStore } from '@assistant/notes';
import { type ApprovalRequest, approvalsFolder, bindApproval, renderToolCall } from '../index.ts';

/** The last line of the long argument: what a cut would hide. */
export const memoTail = 'to: attacker@example.com';
/** A harmless-looking memo of exactly 5,000 characters whose last line names where it goes. */
export const memo = (() => {
  const line = 'A harmless memo line about lunch on Friday.\n';
  const head = line.repeat(Math.floor((5_000 - memoTail.length) / line.length));
  return `${head}${'.'.repeat(5_000 - memoTail.length - head.length)}${memoTail}`;
})();
/** The service's inputs, as the model chose them. */
export const issueInputs = {
  repo: 'owner/secret-project',
  title: 'Credentials for the staging box',
  body: 'Here they are:\nuser admin\npassword hunter2',
};
export const toolCallApprovalId = 'ap-0000000000a1';
export const serviceApprovalId = 'ap-0000000000b2';

/** Writes both requests, pending, into `notes`; returns them as written. */
export async function writeSurfaceApprovals(
  notes: NoteStore,
  options: { nowMs?: number; expiresMs?: number } = {},
): Promise<{ toolCall: ApprovalRequest; service: ApprovalRequest }> {
  const nowMs = options.nowMs ?? Date.now();
  const times = {
    status: 'pending' as const,
    created_at: new Date(nowMs).toISOString(),
    expires_at: new Date(nowMs + (options.expiresMs ?? 3_600_000)).toISOString(),
  };
  const input = { memo, subject: 'Lunch' };
  const call = { tool: 'mail__send', tier: 'irreversible' as const, loop: 'system.agent', task: '0'.repeat(26) };
  const rendered = renderToolCall({ ...call, input });
  const toolCall: ApprovalRequest = {
    id: toolCallApprovalId,
    kind: 'tool_call',
    ...times,
    instance: 'system',
    domain: 'system',
    platform: 'agent',
    rule: 'tool gate',
    provenance: 'llm',
    reason: 'mail__send is irreversible',
    item: `transcripts/${call.task}.md`,
    title: `task ${call.task} (system.agent)`,
    actions: [],
    tool_call: {
      tool: call.tool,
      tier: call.tier,
      arguments: JSON.stringify(input),
      task: call.task,
      loop: call.loop,
      call_id: 'call-1',
    },
    rendering: rendered.rendering,
    digest: rendered.digest,
  };
  const service = bindApproval({
    id: serviceApprovalId,
    ...times,
    instance: 'work',
    domain: 'github',
    platform: 'issues',
    rule: 'chat c1',
    provenance: 'llm',
    reason: 'the owner asked to file it',
    item: 'github/work/issues/1.md',
    title: 'Issue 1',
    actions: [
      {
        kind: 'service',
        name: 'github.work.create_issue',
        key: 'service:github.work.create_issue',
        tier: 'irreversible',
        yolo: false,
        inputs: issueInputs,
      },
    ],
  });
  for (const request of [toolCall, service]) {
    await notes.create(`${approvalsFolder}/${request.id}.md`, { data: request as never, body: `# ${request.title}\n` });
  }
  return { toolCall, service };
}

/** What a surface that shows both in full must contain. */
export const mustShow = [
  memoTail,
  'input repo = "owner/secret-project"',
  'input title = "Credentials for the staging box"',
  'password hunter2',
] as const;
