import { Liquid } from 'liquidjs';

// One engine for every template: strict filters (a misspelt filter is an error, not silence), no file system
// access (no `include`/`render` of files), and output that is plain text rather than HTML.
const engine = new Liquid({
  strictFilters: true,
  strictVariables: false,
  ownPropertyOnly: true,
  relativeReference: false,
  root: [],
});

/** Renders a liquid template (`{{ subject | truncate: 80 }}`) over some data; a broken template throws. */
export function renderTemplate(template: string, data: Record<string, unknown>): string {
  return engine.parseAndRenderSync(template, data) as string;
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
