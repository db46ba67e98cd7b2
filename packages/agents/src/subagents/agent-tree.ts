import type { ChildResult } from '../subagent-types.ts';
import { childOwner, childrenDir, listIds, readChildRecord, readChildResult } from './agent-files.ts';

/** One child in a task's tree of sub-agents, as the dashboard shows it. */
export interface AgentTreeNode {
  id: string;
  persona: string;
  task: string;
  /** The task that runs it (the one that claimed it, else the one enqueued for it). */
  taskId?: string;
  depth: number;
  /** Its result, once it is in its parent's inbox. */
  result?: Pick<ChildResult, 'status' | 'reason' | 'steps'>;
  children: AgentTreeNode[];
}

/**
 * The children of `taskId`, their children, and so on: read from `data/agents/`, at most `maxNodes` in all (a tree
 * is 3 deep and 5 wide by default, so 155 at most unless the owner raised the limits).
 */
export async function readAgentTree(options: {
  root: string;
  taskId: string;
  maxNodes?: number;
}): Promise<AgentTreeNode[]> {
  let budget = options.maxNodes ?? 200;
  const walk = async (parent: string, seen: Set<string>): Promise<AgentTreeNode[]> => {
    const nodes: AgentTreeNode[] = [];
    for (const id of await listIds(childrenDir(options.root, parent)).catch(() => [] as string[])) {
      if (budget <= 0) break;
      budget -= 1;
      const record = await readChildRecord(options.root, parent, id).catch(() => undefined);
      if (record === undefined) continue;
      const taskId = (await childOwner(options.root, parent, id).catch(() => undefined)) ?? record.task_id;
      const result = await readChildResult(options.root, parent, id).catch(() => undefined);
      // A task id seen before would be a loop in hand-edited files: shown once, never walked again.
      const children = taskId === undefined || seen.has(taskId) ? [] : await walk(taskId, new Set([...seen, taskId]));
      nodes.push({
        id,
        persona: record.persona,
        task: record.task,
        ...(taskId === undefined ? {} : { taskId }),
        depth: record.depth,
        ...(result === undefined
          ? {}
          : {
              result: {
                status: result.status,
                steps: result.steps,
                ...(result.reason === undefined ? {} : { reason: result.reason }),
              },
            }),
        children,
      });
    }
    return nodes;
  };
  return walk(options.taskId, new Set([options.taskId]));
}
