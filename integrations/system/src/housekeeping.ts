import { expireApprovals, type HandlerContext, pruneConsolidationMarkers, UnrecoverableError } from '@assistant/sdk';

/**
 * `system.housekeeping.run`: what every worker also does quietly on its own timers, done on a schedule where
 * the owner can see it: old done/failed tasks pruned by `queue.retention`, tasks of workers that are gone back to
 * pending/, crash leftovers cleared from tmp/; approval requests past their expiry dropped (each with its own
 * human-log line); the sub-agent folders (data/agents/<task-id>/) and code call logs (data/codeact/<task-id>/) of
 * tasks pruned from the queue removed; and
 * memory's consolidation markers (data/memory/consolidated/) of item notes that no longer exist removed; and the
 * chat stores compacted by the chat instance's `retention` (event logs of idle conversations, answered inbox
 * messages); and, with `human_log.retention_days` set, the human log's day files older than it removed. Writes a
 * summary line only when something changed.
 */
export async function runHousekeeping({
  queueMaintenance,
  chatMaintenance,
  humanLogMaintenance,
  log,
  notes,
  agents,
  codeact,
  dataDir,
}: HandlerContext) {
  if (!queueMaintenance)
    throw new UnrecoverableError('queue housekeeping is only given to the builtin system integration');
  const pruned = await queueMaintenance.prune();
  const recovered = await queueMaintenance.recover();
  const expired = await expireApprovals({
    notes,
    humanLog: { write: ({ message, ...details }) => log.human(message, details) },
  });
  // After the queue's prune: the sub-agent folders of the tasks it just removed go with them.
  const agentFolders = (await agents?.pruneFinished()) ?? 0;
  const callLogs = (await codeact?.pruneFinished()) ?? 0;
  const markers = await pruneConsolidationMarkers({ dataDir, notes });
  const chat = (await chatMaintenance?.compact()) ?? { eventLogs: 0, eventBytes: 0, inboxMessages: 0, recovered: 0 };
  const logDays = (await humanLogMaintenance?.prune()) ?? 0;
  // Each change with the setting that made it, so the log line's reason names what applied (not always the queue's).
  const changes: Array<[change: string, setting: string]> = [];
  const queueRetention = 'queue.retention';
  if (pruned.done + pruned.failed > 0)
    changes.push([`pruned ${pruned.done} done and ${pruned.failed} failed tasks`, queueRetention]);
  if (recovered.requeued.length > 0)
    changes.push([`returned ${recovered.requeued.length} tasks of stopped workers to pending/`, 'queue recovery']);
  if (recovered.failed.length > 0)
    changes.push([`failed ${recovered.failed.length} tasks that had no attempts left`, 'queue recovery']);
  if (recovered.quarantined.length > 0)
    changes.push([`moved ${recovered.quarantined.length} unreadable task files to failed/`, 'queue recovery']);
  if (expired.length > 0) changes.push([`dropped ${expired.length} expired approval requests`, 'approval expiry']);
  if (agentFolders > 0)
    changes.push([`removed the sub-agent folders of ${agentFolders} pruned tasks (data/agents/)`, queueRetention]);
  if (callLogs > 0)
    changes.push([`removed the code call logs of ${callLogs} pruned tasks (data/codeact/)`, queueRetention]);
  if (markers.removed > 0)
    changes.push([
      `removed ${markers.removed} consolidation markers of notes that are gone (data/memory/consolidated/)`,
      'memory',
    ]);
  if (chat.eventLogs > 0)
    changes.push([
      `compacted ${chat.eventLogs} chat event logs (${chat.eventBytes} bytes of old events removed)`,
      'chat retention',
    ]);
  if (chat.inboxMessages > 0)
    changes.push([`removed ${chat.inboxMessages} answered chat inbox messages`, 'chat retention']);
  if (chat.recovered > 0)
    changes.push([`cleared ${chat.recovered} leftovers of chat compactions that died`, 'chat retention']);
  if (logDays > 0)
    changes.push([
      `removed ${logDays} days of this log older than human_log.retention_days`,
      'human_log.retention_days',
    ]);
  if (changes.length > 0) {
    const settings = [...new Set(changes.map(([, setting]) => setting))];
    await log.human(changes.map(([change]) => change).join('; '), {
      reason: `scheduled housekeeping (${settings.join(', ')})`,
    });
  }
  return {
    pruned,
    requeued: recovered.requeued.length,
    failed: recovered.failed.length,
    quarantined: recovered.quarantined.length,
    removedDuplicates: recovered.removedDuplicates.length,
    removedTmp: recovered.removedTmp,
    expiredApprovals: expired,
    agentFolders,
    callLogs,
    consolidationMarkers: markers.removed,
    chat,
    humanLogDays: logDays,
  };
}
