// Extracts the GitHub response and webhook examples the fake GitHub server serves, from the packages Octokit keeps:
// GitHub's own REST description (@octokit/openapi, its documented example responses) and @octokit/webhooks-examples
// (real deliveries). Neither package is a dependency (the REST description alone is 385 MB): install them in a
// temporary folder and point this script at it.
//
//   mkdir /tmp/gh && cd /tmp/gh && npm install @octokit/openapi @octokit/webhooks-examples
//   node scripts/extract-github-examples.ts /tmp/gh/node_modules
//
// It writes integrations/github/src/testing/examples/{rest,webhooks}.json; run `npx biome check --write` on them after.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

const root = process.argv[2];
if (!root) {
  console.error(
    'usage: node scripts/extract-github-examples.ts NODE_MODULES (with @octokit/openapi and @octokit/webhooks-examples)',
  );
  process.exit(2);
}
const out = path.join(import.meta.dirname, '../integrations/github/src/testing/examples');

/** The operations the fake serves: method, path, status. */
const operations: [string, string, string][] = [
  ['get', '/user', '200'],
  ['get', '/app', '200'],
  ['get', '/rate_limit', '200'],
  ['get', '/search/issues', '200'],
  ['get', '/repos/{owner}/{repo}/pulls/{pull_number}', '200'],
  ['get', '/repos/{owner}/{repo}/issues/{issue_number}', '200'],
  ['get', '/repos/{owner}/{repo}/issues/{issue_number}/comments', '200'],
  ['post', '/repos/{owner}/{repo}/issues/{issue_number}/comments', '201'],
  ['get', '/repos/{owner}/{repo}/pulls/{pull_number}/reviews', '200'],
  ['post', '/repos/{owner}/{repo}/pulls/{pull_number}/reviews', '200'],
  ['get', '/repos/{owner}/{repo}/commits/{ref}/check-runs', '200'],
  ['get', '/repos/{owner}/{repo}/commits/{ref}/status', '200'],
  ['post', '/repos/{owner}/{repo}/issues/{issue_number}/labels', '200'],
  ['delete', '/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}', '200'],
  ['post', '/repos/{owner}/{repo}/issues/{issue_number}/assignees', '201'],
  ['post', '/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers', '201'],
  ['patch', '/repos/{owner}/{repo}/issues/{issue_number}', '200'],
  ['put', '/repos/{owner}/{repo}/pulls/{pull_number}/merge', '200'],
  ['put', '/repos/{owner}/{repo}/pulls/{pull_number}/merge', '405'],
  ['put', '/repos/{owner}/{repo}/pulls/{pull_number}/merge', '409'],
  ['post', '/repos/{owner}/{repo}/issues', '201'],
  ['post', '/app/installations/{installation_id}/access_tokens', '201'],
];

/** Webhook events and actions kept, the first example of each. */
const deliveries: [string, string | undefined][] = [
  ['ping', undefined],
  ['pull_request', 'opened'],
  ['pull_request', 'synchronize'],
  ['pull_request_review', 'submitted'],
  ['pull_request_review_comment', 'created'],
  ['issues', 'opened'],
  ['issue_comment', 'created'],
  ['check_suite', 'completed'],
  ['check_run', 'completed'],
  ['status', undefined],
  ['push', undefined],
];

type Json = Record<string, unknown>;

const openapiFile = path.join(root, '@octokit/openapi/generated/api.github.com.json');
const openapi = JSON.parse(await readFile(openapiFile, 'utf8')) as Json;
const openapiVersion = (JSON.parse(await readFile(path.join(root, '@octokit/openapi/package.json'), 'utf8')) as Json)
  .version;

function resolve(node: Json): Json {
  const ref = node.$ref;
  if (typeof ref !== 'string') return node;
  const [, section, name] = /^#\/components\/(\w+)\/(.+)$/.exec(ref) ?? [];
  return ((openapi.components as Record<string, Record<string, Json>>)[section ?? '']?.[name ?? ''] ?? {}) as Json;
}

const rest: Record<string, unknown> = {};
for (const [method, route, status] of operations) {
  const paths = openapi.paths as Record<string, Record<string, { responses: Record<string, Json> }>>;
  const response = resolve(paths[route]?.[method]?.responses[status] ?? {});
  const content = (response.content as Record<string, { examples?: Record<string, Json> }> | undefined)?.[
    'application/json'
  ];
  const first = Object.values(content?.examples ?? {})[0];
  if (!first) throw new Error(`no example for ${method.toUpperCase()} ${route} ${status}`);
  rest[`${method.toUpperCase()} ${route} ${status}`] = resolve(first).value;
}

const webhooksFile = path.join(root, '@octokit/webhooks-examples/api.github.com/index.json');
const webhookVersion = (
  JSON.parse(await readFile(path.join(root, '@octokit/webhooks-examples/package.json'), 'utf8')) as Json
).version;
const events = JSON.parse(await readFile(webhooksFile, 'utf8')) as { name: string; examples: Json[] }[];
const webhooks: Record<string, unknown> = {};
for (const [event, action] of deliveries) {
  const example = events
    .find((candidate) => candidate.name === event)
    ?.examples.find((candidate) => action === undefined || candidate.action === action);
  if (!example) throw new Error(`no webhook example for ${event}${action ? `.${action}` : ''}`);
  webhooks[action ? `${event}.${action}` : event] = example;
}

await writeFile(
  path.join(out, 'rest.json'),
  `${JSON.stringify({ source: `@octokit/openapi ${openapiVersion}, generated/api.github.com.json`, examples: rest }, null, 2)}\n`,
);
await writeFile(
  path.join(out, 'webhooks.json'),
  `${JSON.stringify({ source: `@octokit/webhooks-examples ${webhookVersion}, api.github.com/index.json`, examples: webhooks }, null, 2)}\n`,
);
console.log(
  `wrote ${Object.keys(rest).length} REST examples and ${Object.keys(webhooks).length} webhook deliveries to ${out}`,
);
