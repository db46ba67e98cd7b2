import type { ListenerApprovalSummary } from '@assistant/sdk';

/** A pending approval request as the approvals service lists it to a listener: one bound action, a short rendering. */
export const dentistApproval: ListenerApprovalSummary = {
  id: 'ap-00000000000a',
  title: 'Invoice from the dentist',
  actions: 'send_reply',
  rule: 'answer invoices',
  reason: 'an invoice',
  expiresAt: '2026-12-01T00:00:00.000Z',
  rendering: 'send_reply to dentist@example.com:\nThank you, it is paid.',
  bound: true,
};
