import { randomBytes } from 'node:crypto';
import type { ChatMessage, ToolCall, ToolSpec } from './chat-types.ts';

/**
 * Tool calls for models that have none natively: the tools are described in the system prompt and the model answers
 * in the ReAct format (Thought / Action / Action Input, or Final Answer); earlier calls and their results are
 * rendered back as that text. One action per turn, which such models follow far better than several.
 */
export function reactMessages(messages: readonly ChatMessage[], tools: readonly ToolSpec[]): ChatMessage[] {
  const instructions = [
    'You can use these tools:',
    ...tools.map(
      (tool) => `- ${tool.name}: ${tool.description} Input: a JSON object matching ${JSON.stringify(tool.parameters)}`,
    ),
    '',
    'To use a tool, answer with exactly these three lines and nothing after them:',
    'Thought: why this tool',
    'Action: the tool name',
    'Action Input: the input as one line of JSON',
    '',
    'You will then get the result as "Observation: …". When you know the answer, reply with:',
    'Thought: why you are done',
    'Final Answer: the answer',
  ].join('\n');
  const converted: ChatMessage[] = [];
  let hasSystem = false;
  for (const message of messages) {
    if (message.role === 'system' && !hasSystem) {
      converted.push({ role: 'system', content: `${message.content}\n\n${instructions}` });
      hasSystem = true;
    } else if (message.role === 'assistant' && message.toolCalls && message.toolCalls.length > 0) {
      const [call] = message.toolCalls;
      converted.push({
        role: 'assistant',
        content: `Thought: ${message.content ?? 'I will use a tool.'}\nAction: ${call?.name}\nAction Input: ${call?.arguments}`,
      });
    } else if (message.role === 'tool') {
      converted.push({ role: 'user', content: `Observation: ${message.content}` });
    } else converted.push(message);
  }
  if (!hasSystem) converted.unshift({ role: 'system', content: instructions });
  return converted;
}

/** Reads a ReAct reply: a tool call, or the final answer (a reply in neither format counts as the answer). */
export function parseReactReply(
  text: string,
  tools: readonly ToolSpec[],
): { content: string | null; toolCalls: ToolCall[] } {
  const finalAnswer = /^\s*Final Answer:\s*([\s\S]*)$/im.exec(text);
  const action = /^\s*Action:\s*(.+?)\s*$/im.exec(text);
  if (action?.[1] && (!finalAnswer || (action.index ?? 0) < (finalAnswer.index ?? 0))) {
    const name = action[1].replace(/^[`"']|[`"']$/g, '');
    const input = /^\s*Action Input:\s*([\s\S]*?)\s*(?:^\s*Observation:|$(?![\s\S]))/im.exec(text.slice(action.index));
    const thought = /^\s*Thought:\s*([\s\S]*?)\s*^\s*Action:/im.exec(text)?.[1]?.trim() ?? null;
    if (tools.some((tool) => tool.name === name)) {
      return {
        content: thought,
        toolCalls: [{ id: `call_${randomBytes(6).toString('hex')}`, name, arguments: stripFence(input?.[1] ?? '{}') }],
      };
    }
  }
  if (finalAnswer?.[1] !== undefined) return { content: finalAnswer[1].trim(), toolCalls: [] };
  return { content: text.trim(), toolCalls: [] };
}

function stripFence(text: string): string {
  return text
    .trim()
    .replace(/^```(?:json)?\s*/i, '')
    .replace(/\s*```$/, '')
    .trim();
}
