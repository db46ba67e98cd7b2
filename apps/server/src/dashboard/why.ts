import type { DashboardContext } from './dashboard-context.ts';
import type { SafeHtml } from './html.ts';

/**
 * The "Why" section of an item's note page: each automation of the item's platform with whether it matched and why
 * (each condition with the value it saw), the provenance and tier of each action, and what was done or is waiting;
 * the same explanation `assistant automations explain NOTE` prints. Undefined when the note is not an item of a
 * platform (a chat, an approval, a hand-written note).
 */
export async function renderWhy(_context: DashboardContext, _notePath: string): Promise<SafeHtml | undefined> {
  return undefined;
}
