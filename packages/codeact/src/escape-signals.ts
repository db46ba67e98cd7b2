// Names and shapes that sandbox escapes use. A cell that contains one is run like any other (the sandbox is the
// boundary, not this list) and the attempt is logged at WARN so that the owner sees a model probing its walls.
const signals: readonly { name: string; pattern: RegExp }[] = [
  // `process` as a name (`process.env`, `global.process`, `typeof process`), not as a verb in prose ("process the inbox").
  { name: 'process', pattern: /(?<![\w$])process(?![\w$])(?!\s+[A-Za-z])/ },
  { name: 'require', pattern: /\brequire\s*(?:\(|\.)/ },
  { name: 'import', pattern: /\bimport\s*\(|^\s*import[\s{*]|\bimport\.meta\b/m },
  { name: 'Function constructor', pattern: /\bFunction\s*\(|\bconstructor\s*(?:\.|\[)\s*['"`]?constructor\b/ },
  { name: 'constructor lookup', pattern: /\[\s*['"`]constructor['"`]\s*\]/ },
  { name: 'prototype pollution', pattern: /__proto__|\bObject\.prototype\s*\.\s*\w+\s*=|\bsetPrototypeOf\b/ },
  { name: 'WebAssembly', pattern: /\bWebAssembly\b/ },
  { name: 'shared memory', pattern: /\bSharedArrayBuffer\b|\bAtomics\b/ },
  { name: 'host globals', pattern: /\b(?:global|Deno|Bun|__dirname|__filename|module\.exports)\b/ },
];

/** The names of the escape techniques `code` appears to use, in a fixed order; empty for ordinary code. */
export function escapeSignals(code: string): string[] {
  return signals.filter(({ pattern }) => pattern.test(code)).map(({ name }) => name);
}
