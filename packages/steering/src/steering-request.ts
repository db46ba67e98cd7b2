import * as z from 'zod';

export const steeringActions = ['pause', 'resume', 'stop', 'interject', 'ask', 'answer'] as const;
export type SteeringAction = (typeof steeringActions)[number];

/**
 * A request's name in its channel (the file name without `.json`), what `settle` takes. Our writer makes
 * `<time>-<sequence>-<random>`; the pattern is wider so a hand-written request still works, and narrow enough that
 * it never names anything but a file in the task's `requests/` folder (no `/`, no leading dot).
 */
export const steeringRequestIdPattern = /^[0-9A-Za-z][0-9A-Za-z_.-]{0,199}$/;

export const steeringRequestSchema = z
  .strictObject({
    id: z.string(),
    action: z.enum(steeringActions),
    message: z.string().max(20_000).optional(),
    reason: z.string().max(2_000).optional(),
    clarification_id: z.string().optional(),
    created_at: z.string(),
    source: z.string(),
  })
  .superRefine((request, context) => {
    const needsMessage = request.action === 'interject' || request.action === 'ask' || request.action === 'answer';
    if (needsMessage && !request.message) {
      context.addIssue({ code: 'custom', path: ['message'], message: `\`${request.action}\` needs a message` });
    }
    if (request.action === 'answer' && !request.clarification_id) {
      context.addIssue({ code: 'custom', path: ['clarification_id'], message: '`answer` needs the clarification id' });
    }
  });
export type SteeringRequest = z.infer<typeof steeringRequestSchema>;

export const steeringOutcomeSchema = z.looseObject({
  request_id: z.string(),
  status: z.enum(['applied', 'refused']),
  message: z.string().optional(),
  answer: z.string().optional(),
  at: z.string(),
});
export type SteeringOutcome = z.infer<typeof steeringOutcomeSchema>;

/** What the worker records when it settles a request: the channel adds the request's id and the time. */
export type SteeringSettlement = Omit<SteeringOutcome, 'request_id' | 'at'>;

/** One line of `events.jsonl`. */
export interface ControlEvent {
  type: string;
  at: string;
  lineage?: readonly string[];
  [key: string]: unknown;
}
