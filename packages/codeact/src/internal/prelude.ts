// The JavaScript evaluated in each fresh QuickJS context before the cell. It runs inside the sandbox, with the
// sandbox's own intrinsics captured before any cell code can replace them, and it builds the only two things a
// cell receives beyond the language: `tools` (the primitives) and `console` (captured logs).
//
// It is called with two host functions and returns a small object of sandbox functions the worker uses:
// - hostCall(pathIndex, argsText) -> Promise<string>: the bridge; answers with JSON text parsed here.
// - hostLog(text): appends one line to the cell's logs.
// - compile(code) -> async function: the cell's body, so `return` and top-level `await` work and nothing can be
//   injected around it.
// - toJsonText(value) -> string: the cell's value as JSON text, refusing what is not JSON (undefined is null).
export const prelude = String.raw`(function (hostCall, hostLog, pathsText) {
  'use strict';
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const isArray = Array.isArray;
  const getPrototypeOf = Object.getPrototypeOf;
  const objectPrototype = Object.prototype;
  const keys = Object.keys;
  const freeze = Object.freeze;
  const defineProperty = Object.defineProperty;
  const create = Object.create;
  const isFinite = Number.isFinite;
  const SandboxTypeError = TypeError;
  const SandboxError = Error;
  const SandboxString = String;
  const SandboxSet = Set;
  const setHas = Set.prototype.has;
  const setAdd = Set.prototype.add;
  const setDelete = Set.prototype.delete;
  const call = Function.prototype.call;
  const has = (set, value) => call.call(setHas, set, value);
  const add = (set, value) => call.call(setAdd, set, value);
  const remove = (set, value) => call.call(setDelete, set, value);

  // JSON text made by walking the value once: what is not JSON is refused with where it was, never silently
  // turned into null; getters and Proxy traps run once, so the text is what the walk saw; and no toJSON (which
  // the cell could put on Object.prototype) is consulted. The captured stringify only ever sees primitive strings.
  function toJsonText(value, at, seen) {
    if (value === null) return 'null';
    if (typeof value === 'boolean') return value ? 'true' : 'false';
    if (typeof value === 'string') return stringify(value);
    if (typeof value === 'number') {
      if (isFinite(value)) return SandboxString(value);
      throw new SandboxTypeError(SandboxString(value) + ' at ' + (at || 'the top') + ' is not a JSON number');
    }
    if (typeof value !== 'object') {
      throw new SandboxTypeError('a ' + typeof value + ' at ' + (at || 'the top') + ' cannot cross to the host: only JSON values can');
    }
    if (has(seen, value)) throw new SandboxTypeError('a cycle at ' + (at || 'the top') + ' cannot cross to the host');
    add(seen, value);
    try {
      let text = '';
      if (isArray(value)) {
        const length = value.length;
        for (let index = 0; index < length; index += 1) {
          text += (index === 0 ? '' : ',') + toJsonText(value[index], at + '[' + index + ']', seen);
        }
        return '[' + text + ']';
      }
      const prototype = getPrototypeOf(value);
      if (prototype !== objectPrototype && prototype !== null) {
        throw new SandboxTypeError('a non-plain object at ' + (at || 'the top') + ' cannot cross to the host: only JSON values can');
      }
      const names = keys(value);
      for (let index = 0; index < names.length; index += 1) {
        const key = names[index];
        const item = value[key];
        if (item === undefined) continue;
        text += (text === '' ? '' : ',') + stringify(SandboxString(key)) + ':' + toJsonText(item, at + '.' + key, seen);
      }
      return '{' + text + '}';
    } finally {
      remove(seen, value);
    }
  }
  const valueText = (value) => toJsonText(value === undefined ? null : value, '', new SandboxSet());

  const tools = create(null);
  const paths = parse(pathsText);
  for (let pathIndex = 0; pathIndex < paths.length; pathIndex += 1) {
    const path = paths[pathIndex];
    let node = tools;
    for (let depth = 0; depth < path.length - 1; depth += 1) {
      if (node[path[depth]] === undefined) node[path[depth]] = create(null);
      node = node[path[depth]];
    }
    const name = path.join('.');
    const primitive = async function (...args) {
      let argsText = '';
      for (let index = 0; index < args.length; index += 1) {
        try {
          argsText += (index === 0 ? '' : ',') + toJsonText(args[index], 'argument ' + index, new SandboxSet());
        } catch (error) {
          throw new SandboxTypeError('tools.' + name + ': ' + SandboxString(error.message));
        }
      }
      return parse(await hostCall(pathIndex, '[' + argsText + ']'));
    };
    defineProperty(primitive, 'name', { value: name });
    node[path[path.length - 1]] = primitive;
  }
  const deepFreeze = (node) => {
    for (const key of keys(node)) if (typeof node[key] === 'object') deepFreeze(node[key]);
    return freeze(node);
  };
  deepFreeze(tools);

  const format = (value) => {
    if (typeof value === 'string') return value;
    if (value instanceof SandboxError) return SandboxString(value.name) + ': ' + SandboxString(value.message);
    try {
      const text = stringify(value);
      return text === undefined ? SandboxString(value) : text;
    } catch (error) {
      return SandboxString(value);
    }
  };
  const log = (...values) => { hostLog(values.map(format).join(' ')); };
  const console = freeze({ log, info: log, warn: log, error: log, debug: log });

  // Not part of the language a cell needs, and each a way to block or to share memory with something else.
  delete globalThis.SharedArrayBuffer;
  delete globalThis.Atomics;
  delete globalThis.WebAssembly;
  defineProperty(globalThis, 'tools', { value: tools, enumerable: true });
  defineProperty(globalThis, 'console', { value: console, enumerable: true, writable: true, configurable: true });

  const AsyncFunction = (async function () {}).constructor;
  // What the model reads when the cell fails: the error's own name, message and the sandbox's stack (positions
  // in the cell; host functions show as native).
  const describe = (error) => {
    if (error instanceof SandboxError) {
      const stack = typeof error.stack === 'string' ? error.stack : '';
      return SandboxString(error.name) + ': ' + SandboxString(error.message) + (stack ? '\n' + stack : '');
    }
    return 'Uncaught ' + format(error);
  };
  const isPrimitiveError = (error) => error instanceof SandboxError && error.name === 'PrimitiveError';
  return {
    compile: (code) => new AsyncFunction(code),
    toJsonText: valueText,
    describe,
    isPrimitiveError,
  };
})`;
