import { createRequire } from 'node:module';
import type { Liquid } from 'liquidjs';

// One engine for every template: strict filters (a misspelt filter is an error, not silence), no file system
// access (no `include`/`render` of files), and output that is plain text rather than HTML. Made on the first
// render, not at import: most processes (the server, an idle worker) never render one. liquidjs is CommonJS, so
// require() loads it synchronously, as rendering is.
let engine: Liquid | undefined;
function liquid(): Liquid {
  if (engine) return engine;
  const { Liquid: LiquidEngine } = createRequire(import.meta.url)('liquidjs') as typeof import('liquidjs');
  engine = new LiquidEngine({
    strictFilters: true,
    strictVariables: false,
    ownPropertyOnly: true,
    relativeReference: false,
    root: [],
  });
  return engine;
}

/** Renders a liquid template (`{{ subject | truncate: 80 }}`) over some data; a broken template throws. */
export function renderTemplate(template: string, data: Record<string, unknown>): string {
  return liquid().parseAndRenderSync(template, data) as string;
}

/** Renders the string values of a mapping of inputs; numbers and booleans pass through. */
export function renderInputs(
  inputs: Record<string, string | number | boolean> | undefined,
  data: Record<string, unknown>,
): Record<string, string | number | boolean> {
  return Object.fromEntries(
    Object.entries(inputs ?? {}).map(([name, value]) => [
      name,
      typeof value === 'string' ? renderTemplate(value, data) : value,
    ]),
  );
}
