/**
 * Notes as MCP resources: `assistant://notes/{+path}`, the path relative to the notes folder with each segment
 * percent-encoded (`+` so the template matches the slashes between folders).
 */
export const noteUriTemplate = 'assistant://notes/{+path}';

const prefix = 'assistant://notes/';

export function noteUri(notePath: string): string {
  return `${prefix}${notePath.split('/').map(encodeURIComponent).join('/')}`;
}

/** The note path of a resource URI; throws, saying what a note URI looks like, for anything else. */
export function pathOfNoteUri(uri: string): string {
  if (!uri.startsWith(prefix) || uri.length === prefix.length) {
    throw new Error(`\`${uri}\` is not a note URI; note URIs look like ${prefix}email/personal/1700000000-42.md`);
  }
  try {
    return uri.slice(prefix.length).split('/').map(decodeURIComponent).join('/');
  } catch {
    throw new Error(`\`${uri}\` is not a note URI: it holds a broken percent-escape`);
  }
}
