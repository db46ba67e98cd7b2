import { defineTool, findModelUnavailable, type HandlerContext, noteTools, UnrecoverableError } from '@assistant/sdk';
import * as z from 'zod';

const payloadSchema = z.strictObject({
  prompt: z.string().min(1).max(20_000),
  profile: z.string().optional(),
  max_steps: z.int().min(1).max(200).optional(),
  /** Names under config.yaml's `mcp_servers:` whose tools the loop gets too (docs/mcp.md). */
  mcp_servers: z.array(z.string().min(1).max(100)).max(20).optional(),
});

/**
 * `system.agent`: a general steerable agent loop over the notes: `{prompt, profile?, max_steps?, mcp_servers?}`. It
 * can search the notes, read one, wait (for steering tests and for things that take time), and use the tools of the
 * MCP servers `mcp_servers` names. Pause, interject, ask and stop it
 * with `assistant steer`; watch it with `assistant task watch`. A worker that dies mid-loop resumes it from its
 * transcript note.
 */
export async function runAgentTask(context: HandlerContext) {
  const checked = payloadSchema.safeParse(context.payload);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new UnrecoverableError(
      `system.agent expects {"prompt": "…"}; ${issue?.path.join('.') || 'payload'}: ${issue?.message}`,
    );
  }
  const { prompt, profile, max_steps: maxSteps, mcp_servers: mcpServers = [] } = checked.data;
  const mcpTools = await context.mcpTools(mcpServers).catch((error: unknown) => {
    // A name config does not define will not appear by retrying; a server that cannot start now may start later.
    if (error instanceof Error && 'code' in error && error.code === 'MCP_SERVER_UNKNOWN') {
      throw new UnrecoverableError(`system.agent: ${error.message}`);
    }
    throw error;
  });
  const handle = context.agent({
    system:
      'You are Assistant, working for your owner on their notes. Use the tools to find facts; say plainly what you did not find. Answer briefly.',
    input: prompt,
    ...(profile ? { profile } : {}),
    ...(maxSteps ? { maxSteps } : {}),
    tools: [
      ...noteTools(context.notes),
      defineTool({
        name: 'wait',
        description: 'Waits the given number of milliseconds (at most a minute), then says so.',
        input: z.object({ ms: z.int().min(0).max(60_000) }),
        tier: 'read_only',
        run: async ({ ms }, tool) => {
          await new Promise<void>((resolve, reject) => {
            const timer = setTimeout(resolve, ms);
            tool.signal.addEventListener(
              'abort',
              () => {
                clearTimeout(timer);
                reject(tool.signal.reason);
              },
              { once: true },
            );
          });
          await tool.waitWhilePaused();
          return `waited ${ms} ms`;
        },
      }),
      ...mcpTools,
    ],
  });
  const result = await handle.result();
  // Stopped by the worker (shutdown, timeout), not by a person: let the queue retry or release the task.
  if (context.signal.aborted) throw context.signal.reason;
  // The model is unavailable: the task waits for it (the worker puts it back without spending an attempt) and the
  // loop resumes from its transcript, rather than ending `failed` with the outage as its answer.
  if (result.status === 'failed' && findModelUnavailable(result.error)) throw result.error;
  return {
    status: result.status,
    answer: result.answer ?? null,
    reason: result.reason ?? null,
    steps: result.steps,
    usage: result.usage,
  };
}
