import type { ChatMessage, ChatModel } from '@assistant/llm';
import * as z from 'zod';
import { estimateTokensByCharacters } from '../compression/estimate-tokens.ts';
import type { Tool } from '../tools/define-tool.ts';
import type { ToolGate } from '../tools/tool-gate.ts';
import type { TranscriptStore } from '../transcript/transcript-store.ts';
import type { AgentEvent } from './agent-event.ts';
import type { AgentOptions, OwnerWait } from './agent-options.ts';

/** {@link AgentOptions} with defaults filled in and numbers checked. */
export interface ResolvedAgentOptions {
  model: ChatModel;
  system: string;
  input: ChatMessage[];
  tools: Tool[];
  toolsByName: ReadonlyMap<string, Tool>;
  label: string;
  maxSteps: number;
  timeoutMs: number | undefined;
  budgetTokens: number | undefined;
  toolConcurrency: number;
  transcript: TranscriptStore | undefined;
  onEvent: ((event: AgentEvent) => void) | undefined;
  thresholdRatio: number;
  keepRecent: number;
  estimateTokens: (messages: ChatMessage[]) => number;
  signal: AbortSignal | undefined;
  gate: ToolGate | undefined;
  ownerWait: OwnerWait | undefined;
}

const limitsSchema = z.object({
  label: z.string().min(1),
  maxSteps: z.number().int().positive(),
  timeoutMs: z.number().positive().optional(),
  budgetTokens: z.number().positive().optional(),
  toolConcurrency: z.number().int().positive(),
  thresholdRatio: z.number().positive(),
  keepRecent: z.number().int().nonnegative(),
});

/**
 * Fills in defaults and checks the numeric options, throwing a `TypeError` that names the option, what it got and
 * what it needs: a bad option is a programming error, better caught before the first model call.
 */
export function resolveAgentOptions(options: AgentOptions): ResolvedAgentOptions {
  const limits = {
    label: options.label ?? 'agent',
    maxSteps: options.maxSteps ?? 20,
    timeoutMs: options.timeoutMs,
    budgetTokens: options.budget?.tokens,
    toolConcurrency: options.toolConcurrency ?? 4,
    thresholdRatio: options.compression?.thresholdRatio ?? 0.8,
    keepRecent: options.compression?.keepRecent ?? 6,
  };
  const parsed = limitsSchema.safeParse(limits);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const key = issue.path.map(String).join('.');
      const received = limits[key as keyof typeof limits];
      return `\`${key}\`: ${issue.message}, got ${JSON.stringify(received)} (${typeof received})`;
    });
    throw new TypeError(`Invalid agent options: ${problems.join('; ')}`);
  }
  const tools = [...(options.tools ?? [])];
  const toolsByName = new Map<string, Tool>();
  for (const tool of tools) {
    if (toolsByName.has(tool.name)) {
      throw new TypeError(
        `Invalid agent options: two tools are named ${JSON.stringify(tool.name)}; names must be unique`,
      );
    }
    toolsByName.set(tool.name, tool);
  }
  return {
    ...parsed.data,
    timeoutMs: parsed.data.timeoutMs,
    budgetTokens: parsed.data.budgetTokens,
    model: options.model,
    system: options.system,
    input: typeof options.input === 'string' ? [{ role: 'user', content: options.input }] : [...options.input],
    tools,
    toolsByName,
    transcript: options.transcript,
    onEvent: options.onEvent,
    estimateTokens: options.estimateTokens ?? estimateTokensByCharacters,
    signal: options.signal,
    gate: options.gate,
    ownerWait: options.ownerWait,
  };
}
