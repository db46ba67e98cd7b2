import path from 'node:path';
import { readConfigFile, readYaml } from '@assistant/config';

/**
 * Where each `llms:` profile is written, `config.yaml:12` (the line of its `model:`, else of its name), so a probe
 * that fails names the line to fix. Empty when the file cannot be read again: the probe then names the profile only.
 */
export async function profileLines(options: { configFile: string; cwd: string }): Promise<Map<string, string>> {
  const lines = new Map<string, string>();
  const relative = path.relative(options.cwd, options.configFile);
  const shown = relative.startsWith('..') || path.isAbsolute(relative) ? options.configFile : relative;
  let text: string;
  try {
    text = await readConfigFile(options.configFile, shown);
  } catch {
    return lines;
  }
  // Secrets are not resolved: only positions are wanted, and a value is never read here.
  const source = readYaml({ text, file: shown, resolveSecret: () => ({ value: '' }) });
  const llms = (source.data as { llms?: unknown } | undefined)?.llms;
  if (llms === null || typeof llms !== 'object') return lines;
  for (const name of Object.keys(llms)) {
    const position = source.valueAt(['llms', name, 'model']) ?? source.keyAt(['llms', name]);
    if (position) lines.set(name, `${shown}:${position.line}`);
  }
  return lines;
}
