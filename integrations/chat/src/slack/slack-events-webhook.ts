import type { WebhookContext, WebhookReply } from '@assistant/sdk';
import type { ChatSettings } from '../settings.generated.ts';
import type { SlackEnvelope } from './slack-adapter.ts';
import { spoolEnvelope, spoolFolder } from './slack-spool.ts';

/**
 * `POST /api/integrations/<chat instance>/hooks/slack_events`: Slack's Events API and interactivity requests (both
 * Request URLs of the app point here), their signature (`x-slack-signature` over `v0:<timestamp>:<body>` with
 * `slack.signing_secret`, the timestamp within 5 minutes) already checked by the server (`auth: slack`).
 * `url_verification` is answered with its challenge; an event callback or a button press (`block_actions`) is written
 * to the spool (durably) before the 200, and the `slack` listener takes it from there (decision 0072). A Slack retry
 * (`x-slack-retry-num`) of the same event carries the same `event_id`: it writes nothing new, or, when the first is
 * handled already, its message id finds the message stored — one message, one answer.
 */
export async function receiveSlackEvents(context: WebhookContext<ChatSettings>): Promise<WebhookReply> {
  const settings: Partial<ChatSettings['slack']> = context.instance.settings.slack ?? {};
  if (settings.mode !== 'events') {
    return { status: 404, body: { error: { code: 'NOT_FOUND', message: 'slack.mode is not `events`' } } };
  }
  const body = context.request.body.toString('utf8');
  const type = String(context.request.headers['content-type'] ?? '');
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(
      type.startsWith('application/x-www-form-urlencoded') ? (new URLSearchParams(body).get('payload') ?? '') : body,
    ) as Record<string, unknown>;
    if (parsed === null || typeof parsed !== 'object') throw new Error('not an object');
  } catch {
    return { status: 400, body: { error: { code: 'INPUT_INVALID', message: 'not a Slack event or interaction' } } };
  }
  if (parsed.type === 'url_verification') return { status: 200, body: String(parsed.challenge ?? '') };
  const folder = spoolFolder(context.dataDir, context.instance.name);
  let key: string | undefined;
  let envelope: SlackEnvelope | undefined;
  if (parsed.type === 'event_callback' && typeof parsed.event_id === 'string') {
    key = `event:${parsed.event_id}`;
    envelope = { type: 'events_api', payload: parsed };
  } else if (parsed.type === 'block_actions') {
    const actions = parsed.actions as { action_ts?: unknown }[] | undefined;
    const user = (parsed.user as { id?: unknown } | undefined)?.id;
    key = `press:${String(user)}:${String(actions?.[0]?.action_ts)}`;
    envelope = { type: 'interactive', payload: parsed };
  }
  if (key === undefined || envelope === undefined) return { status: 200 };
  const fresh = await spoolEnvelope(folder, key, envelope);
  const retry = context.request.headers['x-slack-retry-num'];
  if (retry !== undefined) {
    context.logger.info(
      `Slack retry ${String(retry)} of ${key}${fresh ? '' : ' (still spooled: nothing new)'} (${String(context.request.headers['x-slack-retry-reason'] ?? 'no reason given')})`,
    );
  }
  return { status: 200 };
}
