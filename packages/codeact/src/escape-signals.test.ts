import { describe, expect, it } from 'vitest';
import { escapeSignals } from './escape-signals.ts';

describe('escapeSignals', () => {
  it.each([
    ['return process.env;', ['process']],
    ['const g = Function("return this")(); return g.process;', ['process', 'Function constructor']],
    ['return typeof process;', ['process']],
    ['return require("fs");', ['require']],
    ['await import("node:fs");', ['import']],
    ['import fs from "node:fs";', ['import']],
    ['({}).constructor.constructor("return 1")();', ['Function constructor']],
    ['x["constructor"]', ['constructor lookup']],
    ['({}).__proto__.polluted = 1;', ['prototype pollution']],
    ['Object.prototype.toJSON = () => 1;', ['prototype pollution']],
    ['new WebAssembly.Module(bytes);', ['WebAssembly']],
    ['Atomics.wait(view, 0, 0);', ['shared memory']],
    ['new SharedArrayBuffer(8);', ['shared memory']],
    ['return Deno.env;', ['host globals']],
  ])('names what %s tries', (code, expected) => {
    expect(escapeSignals(code)).toEqual(expected);
  });

  it.each([
    'const mails = await tools.email.search({ unread: true });\nreturn mails.map((mail) => mail.subject);',
    'console.log("process the inbox, then import the contacts");',
    'const processed = items.filter((item) => item.imported);',
    'return Object.keys(globalThis);',
  ])('finds nothing in ordinary code: %s', (code) => {
    expect(escapeSignals(code)).toEqual([]);
  });
});
