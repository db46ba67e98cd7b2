import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** What a tool result may hold, as the model gets it. @default 20_000 characters */
export const defaultMaxResultChars = 20_000;

/**
 * A tool result as text for the model: text content as it is, images, audio and binary resources described by type
 * and size rather than inlined (a model reading base64 learns nothing and pays for every byte), structured content
 * as JSON when there is nothing else. Cut to `maxChars` with a note saying how much was cut, so a server cannot
 * fill the context window with one answer.
 */
export function toolResultText(result: CallToolResult, maxChars: number = defaultMaxResultChars): string {
  const parts: string[] = [];
  for (const block of result.content) {
    if (block.type === 'text') parts.push(block.text);
    else if (block.type === 'image' || block.type === 'audio') {
      parts.push(`[${block.type}: ${block.mimeType}, ${formatBytes(base64Bytes(block.data))}, not shown]`);
    } else if (block.type === 'resource_link') {
      parts.push(`[resource link: ${block.uri}${block.name ? ` (${block.name})` : ''}]`);
    } else {
      const resource = block.resource;
      const type = resource.mimeType ? `, ${resource.mimeType}` : '';
      if ('text' in resource && typeof resource.text === 'string') {
        parts.push(`[resource ${resource.uri}${type}]\n${resource.text}`);
      } else if ('blob' in resource && typeof resource.blob === 'string') {
        parts.push(`[binary resource ${resource.uri}${type}, ${formatBytes(base64Bytes(resource.blob))}, not shown]`);
      }
    }
  }
  if (parts.length === 0 && result.structuredContent !== undefined) {
    parts.push(JSON.stringify(result.structuredContent));
  }
  return capText(parts.join('\n'), maxChars);
}

/** `text` cut to `maxChars`, with a line saying how many characters there were. */
export function capText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)}\n[cut: the result has ${text.length} characters; only the first ${maxChars} are shown]`;
}

function base64Bytes(data: string): number {
  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - padding);
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
