/** The longest tool name chat APIs accept. */
const maxNameLength = 64;

/**
 * The name an MCP tool has in an agent loop: `server__tool`, with every character chat APIs refuse (anything but
 * letters, digits, `_` and `-`) turned into `_`, cut to 64 characters, and made unique among `taken` by a `_2`,
 * `_3`… suffix (two long names can cut to the same prefix). Adds the name it returns to `taken`.
 */
export function agentToolName(server: string, tool: string, taken: Set<string>): string {
  const base = `${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, maxNameLength);
  let name = base;
  for (let counter = 2; taken.has(name); counter++) {
    const suffix = `_${counter}`;
    name = base.slice(0, maxNameLength - suffix.length) + suffix;
  }
  taken.add(name);
  return name;
}
