import { createHash } from 'node:crypto';

export const fingerprintLength = 16;

/**
 * JSON with object keys sorted at every depth, so `{a, b}` and `{b, a}` are the same payload. `undefined`
 * members are dropped, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value))
    return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  const entries = Object.entries(value)
    .filter(([, member]) => member !== undefined)
    .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
  return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(',')}}`;
}

/**
 * SHA-256 of the task type and the canonical payload, as 16 hex digits (64 bits): two tasks with the same
 * fingerprint do the same work, which is what dedup looks for in file names.
 */
export function taskFingerprint(type: string, payload: unknown): string {
  return createHash('sha256')
    .update(`${type}\n${canonicalJson(payload ?? null)}`)
    .digest('hex')
    .slice(0, fingerprintLength);
}
