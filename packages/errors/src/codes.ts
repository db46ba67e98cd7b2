/**
 * Every stable error code Assistant raises, with the one-line meaning that docs/errors.md documents. The same
 * codes name thrown errors (`AssistantError.code`) and HTTP error bodies (`{error: {code, message}}`).
 * A code never changes meaning once released; a test checks that each one is documented.
 */
export const errorCodes = {
  // Command line and configuration: the CLI exits 2 for these.
  CONFIG_INVALID: 'config.yaml or secrets.yaml failed validation; `problems` lists each with file, line and key.',
  CONFIG_NOT_FOUND: 'The config file named by --config, ASSISTANT_CONFIG or ./config.yaml does not exist.',
  MANIFEST_INVALID:
    'An integration manifest (manifest.yaml) failed validation, or names a handler that cannot be loaded; the message names the manifest, line and key.',
  USAGE: 'The command line or an ASSISTANT_* environment variable was not understood.',
  // Processes.
  CHILD_EXITED: '`assistant start` stopped because the server or the worker could not be started.',
  PORT_IN_USE: 'The server cannot listen: another process (often a second Assistant) holds `server.host:server.port`.',
  // The LLM layer.
  LLM_REQUEST_FAILED: 'A request to an LLM endpoint failed after its retries, or with an error retrying cannot fix.',
  LLM_OUTPUT_INVALID: 'An LLM kept answering with output that does not match the requested schema.',
  LLM_CONTEXT_TOO_LONG:
    "A request was longer than the model's context window; retrying it cannot help, a shorter conversation or input can.",
  LLM_RESPONSE_MALFORMED:
    "A provider's answer broke its own format (a stream cut off mid-event, tool-call arguments that are not JSON); the message holds a scrubbed excerpt.",
  LLM_SCHEMA_UNSUPPORTED:
    "A JSON Schema uses a construct the profile's provider cannot express (Gemini has no `$ref`, `not`, …); the message names it and where.",
  LLM_REPLAY_MISS: 'The LLM cache is in replay mode and has no recording of this exact request.',
  LLM_UNAVAILABLE:
    "An LLM profile's endpoint is down, overloaded (429, 5xx) or timing out, and its breaker is open: the call was not sent; the task waits until `retry_at` without spending an attempt.",
  // Chat (packages/chat).
  CHAT_NOT_FOUND: 'No conversation note `notes/chats/<id>.md` exists for the id given.',
  CHAT_INPUT_INVALID:
    'A chat call got an input it cannot use (an id that is not a safe file name, an unknown mode, empty text); the message names the field.',
  CHAT_MESSAGE_TOO_LARGE: 'A chat message is longer than the inbox accepts (32 KiB of UTF-8 by default).',
  CHAT_PENDING_FULL:
    'A conversation already holds the maximum number of accepted messages not yet answered (100 by default); the message was not stored.',
  CHAT_ALREADY_ANSWERED: 'A chat message was marked answered by a reply other than the one already recorded for it.',
  CHAT_TURN_LOST: "A chat turn's lease on its conversation (`data/chat/turns/<id>.json`) was taken by another task.",
  CHAT_NO_REPLY:
    '`assistant chat --once` got no reply: the turn answering the message failed, or none came within `--timeout`; the message stays stored.',
  CHAT_NOTE_BROKEN:
    'A conversation note cannot be read (its frontmatter is not valid YAML or misses a field); the message names the file and line.',
  CHAT_TOOL_REFUSED:
    "A chat turn's tool refused what the conversation may not do: decide an approval whose id the owner did not write, or act for a peer who is not the owner.",
  CHAT_MESSAGE_NOT_FOUND:
    "A fork named a message its conversation's transcript does not hold (an unknown id, or a message still waiting in the inbox).",
  // Outbound requests (packages/outbound).
  OUTBOUND_REFUSED:
    'A request to an address chosen by outside text was refused before or while it was made: a scheme, an address that is not public, too many redirects, an answer too large or of a content type not allowed; the message says which.',
  OUTBOUND_FAILED:
    'A request to an outside address failed: its name did not resolve, the connection failed, or it timed out; `connected` says whether the server may have received it.',
  WEBHOOK_SIGNATURE_INVALID:
    'A Standard Webhooks request was not authenticated: a header missing, a timestamp outside the tolerance window, or no signature that matches the body; `reason` says which.',
  WEBHOOK_SECRET_INVALID:
    'A Standard Webhooks secret is not `whsec_` followed by base64 of at least 1 byte (the server log or the failed delivery task names the setting).',
  // MCP servers (packages/mcp).
  MCP_SERVER_UNKNOWN: "A loop or command named an MCP server that config.yaml's `mcp_servers:` does not define.",
  MCP_SERVER_UNAVAILABLE:
    'An MCP server could not be started or reached, or crashed and is waiting out its restart backoff; the message says which and when it is tried again.',
  MCP_CALL_FAILED:
    "A call to an MCP server failed for a reason other than the tool's own error: it timed out, the connection broke, or the server answered with a protocol error.",
  MCP_RESPONSE_TOO_LARGE:
    "An MCP server's answer was larger than its `max_response_bytes`; it was dropped unread and the call failed.",
  // Memory index (packages/memory/src/index).
  MEMORY_EMBEDDINGS_UNAVAILABLE:
    'The embeddings endpoint is down, overloaded (429, 5xx) or timing out: search stays lexical and the notes are embedded again later by themselves.',
  MEMORY_EMBEDDINGS_INVALID:
    'The embeddings endpoint answered, but not with what was asked (a 4xx, a body that is not `{data: [{index, embedding}]}`, the wrong count or size of vectors); the message says which.',
  // Workflows (packages/agents/src/workflows).
  WORKFLOW_UNKNOWN: 'A run named a workflow that has no manifest `agents/<name>.yaml` beside config.yaml.',
  WORKFLOW_INVALID:
    "A workflow's manifest has problems (unknown persona, topology, key, placeholder, a cycle); each has file, line and key.",
  // The queue's Redis backend (packages/queue-redis).
  QUEUE_UNAVAILABLE:
    'The Redis that `queue.backend: redis` names could not be reached or refused the login; the message names its URL, never the password.',
  // Operations: backup, restore, service (apps/cli).
  BACKUP_FAILED:
    '`assistant backup` wrote no archive: the queue kept changing for the whole claims hold; the message says how long.',
  BACKUP_REFUSED:
    '`assistant restore` refused an archive and wrote nothing: a path outside the target, a link, a damaged or altered file, or a manifest that does not match; the message names the entry.',
  SERVICE_NOT_ENABLED:
    '`assistant service` could not reach systemd (no systemctl, no user manager) or systemctl failed; the hint lists the manual steps.',
  // HTTP API error bodies.
  BAD_REQUEST: 'The request body, query or parameters were not valid; the message says which field and why.',
  UNAUTHORIZED:
    'Every route but `GET /health` requires `Authorization: Bearer <token>` (data/api-token or server.token); the request had none or a wrong one.',
  FORBIDDEN:
    'HTTP 403: a web page in a browser called the API: a foreign `Origin`, or a write whose `Sec-Fetch-Site` is another site.',
  MISDIRECTED_REQUEST:
    'HTTP 421: the `Host` header names neither the configured host nor a loopback name (a DNS-rebinding attempt or a wrong proxy).',
  NOT_FOUND: 'No route, task or note matches the request.',
  METHOD_NOT_ALLOWED: 'The route exists but not for this HTTP method.',
  NOT_ACCEPTABLE: 'The server cannot answer in a format the request accepts.',
  CONFLICT:
    'The request is valid but the target is not in a state that allows it (a disabled integration, a task that is not failed).',
  PAYLOAD_TOO_LARGE: 'The request body is larger than the server accepts.',
  UNSUPPORTED_MEDIA_TYPE: 'The request body is not JSON (send `content-type: application/json`).',
  TOO_MANY_REQUESTS: 'A rate limit refused the request; retry later.',
  EVENT_CURSOR_INVALID: 'An event cursor is not one the ledger returns (`YYYY-MM-DD:<byte offset>`).',
  EVENT_QUERY_INVALID:
    'An event query (`events ls` options, `GET /api/events`) has a time that is neither ISO 8601 nor a duration such as `1h`, or a malformed type.',
  HOOK_TEST_EVENT_INVALID:
    'The event given to a hook dry run (`assistant hooks test --event`, `POST /api/hooks/:name/test`) is no event id the ledger holds and no `{type, data}` event.',
  // Personas (packages/agents, docs/agents.md "Personas").
  PERSONA_UNKNOWN:
    'No persona of that name: no `personas/<name>.md` beside config.yaml or in the notes (and it is not the built-in `assistant`).',
  PERSONA_INVALID:
    'A persona file has problems (an unknown key, tool, profile or MCP server, a value out of range, an empty body); the message names each with file, line and key.',
  EVENT_STREAMS_FULL:
    'HTTP 429: the client already holds `server.event_streams_per_client` event streams (32 by default); close one, or retry after `retry-after` seconds.',
  AGENT_LIMIT:
    'A spawn was refused: the tree would be deeper than its `max_depth`, the parent already has `max_children` children running, or the installation `agents.max_live`.',
  AGENT_UNKNOWN: 'A sub-agent id names no child of the agent that used it (wait_agents, message_agent).',
  PERSONA_TOOL_DENIED:
    "A tool call was refused because the loop's persona grants (with what its callers could delegate) do not include the tool.",
  // Memory stores (packages/memory/src/stores).
  MEMORY_SUPERSEDE_REFUSED:
    'A fact extracted from an item (a mail, a GitHub thread, a chat turn) tried to supersede a fact the owner wrote; extracted text never replaces what the owner wrote.',
  MEMORY_INPUT_INVALID:
    'A memory store got an input it cannot use (an empty name or statement, a due date that is not YYYY-MM-DD or an ISO instant, a merge of a contact into itself); the message names the field, what was received and what is valid.',
  MEMORY_NOT_FOUND: 'A contact, fact or task named by slug or id has no note under `contacts/`, `facts/` or `tasks/`.',
  UNAVAILABLE:
    'The server is starting or stopping and cannot serve the request now, or a remote worker cannot reach the server.',
  INTERNAL: 'Something broke inside the server; the details are in the server log, not in the response.',
} as const;

export type ErrorCode = keyof typeof errorCodes;

/** True when `value` is one of the registered codes. */
export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(errorCodes, value);
}
