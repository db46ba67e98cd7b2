// Types of typescript-cache.js, which is plain JavaScript so that it runs before any TypeScript can.

/** `source` (the TypeScript at `url`) without its types, and whether it came from the cache. */
export function strippedTypeScript(url: string, source: string): { code: string; cached: boolean };
