/**
 * The kinds of the owner's notifications a channel pushes (`<channel>.notify` in the chat settings, docs/channels.md
 * "Notifications"): the same names as an outbound webhook endpoint's `events` (without `reply`, which is the answer
 * to a webhook message, not a notification).
 * - `approval`: an approval request, with its buttons where the platform has them;
 * - `clarification`: a question of an agent task;
 * - `failure`: a task that failed for good;
 * - `hook`: a hook's `notify:`.
 */
export const notificationKinds = ['approval', 'clarification', 'failure', 'hook'] as const;

export type NotificationKind = (typeof notificationKinds)[number];

/**
 * The kinds a channel's `notify` setting selects: every kind when it is not set (the default), none for `[]`. Each
 * channel's settings declare the same field (`notify: {type: list, items: {type: enum, values: [approval,
 * clarification, failure, hook]}}`), which a test checks for every channel section of the manifest.
 */
export function notifyPreference(setting: readonly NotificationKind[] | undefined): ReadonlySet<NotificationKind> {
  return new Set(setting ?? notificationKinds);
}
