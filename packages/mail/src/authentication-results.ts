/** What the receiving server found, per method: `pass`, `fail`, `softfail`, `none`, `neutral`, `temperror`, … */
export interface AuthenticationVerdicts {
  dkim?: string;
  spf?: string;
  dmarc?: string;
}

/**
 * `pass`, `fail` or `none` from a header our own server wrote; `unknown` when no configured authserv-id wrote one
 * (none configured, or no such header): then nothing is known, whatever the message claims.
 */
export type Authentication = 'pass' | 'fail' | 'none' | 'unknown';

export interface TrustedAuthentication {
  authentication: Authentication;
  authentication_results: AuthenticationVerdicts;
  /** The authserv-id of the header the verdicts come from. */
  authenticated_by?: string;
}

const methods = ['dkim', 'spf', 'dmarc'] as const;

/**
 * The verdicts of the instance's own mail server (RFC 8601 §5). A sender can write any Authentication-Results header
 * into a message, so only headers whose authserv-id the owner configured count, and of those only the topmost block:
 * from the first trusted header down to the next Received header (the hop before ours) or a header of another
 * authserv-id. Headers of other servers above ours (a filter after our server) are skipped. For each method the
 * topmost verdict wins. This relies on the server removing incoming headers that carry its own authserv-id, as
 * RFC 8601 §5 requires of it.
 *
 * @param headers the message's header lines, top first, as `{key, value}` with lower-case keys and unfolded values.
 */
export function trustedAuthentication(
  headers: readonly { key: string; value: string }[],
  authservIds: readonly string[],
): TrustedAuthentication {
  const trusted = new Set(authservIds.map((id) => id.toLowerCase()));
  const results: AuthenticationVerdicts = {};
  let authenticatedBy: string | undefined;
  for (const header of headers) {
    if (authenticatedBy !== undefined && header.key === 'received') break;
    if (header.key !== 'authentication-results') continue;
    const parsed = parseAuthenticationResults(header.value);
    if (!parsed || !trusted.has(parsed.authservId.toLowerCase())) {
      if (authenticatedBy !== undefined) break;
      continue;
    }
    authenticatedBy ??= parsed.authservId;
    for (const method of methods) {
      const verdict = parsed.results[method];
      if (verdict !== undefined && results[method] === undefined) results[method] = verdict;
    }
  }
  if (authenticatedBy === undefined) return { authentication: 'unknown', authentication_results: {} };
  const verdicts = Object.values(results);
  const failed = verdicts.some((value) => value === 'fail' || value === 'softfail');
  const passed = verdicts.some((value) => value === 'pass');
  return {
    authentication: failed ? 'fail' : passed ? 'pass' : 'none',
    authentication_results: results,
    authenticated_by: authenticatedBy,
  };
}

/**
 * One Authentication-Results value (RFC 8601 §2.2): `authserv-id [version] ; method[/version]=result … ; …` or
 * `authserv-id; none`, with comments anywhere and the id possibly quoted. Undefined when there is no id.
 */
function parseAuthenticationResults(
  value: string,
): { authservId: string; results: Record<string, string> } | undefined {
  const [head = '', ...resinfos] = splitOutsideQuotes(withoutComments(value), ';');
  const id = /^\s*(?:"((?:[^"\\]|\\.)*)"|([^\s";]+))/.exec(head);
  const authservId = id?.[1]?.replace(/\\(.)/g, '$1') ?? id?.[2];
  if (!authservId) return undefined;
  const results: Record<string, string> = {};
  for (const resinfo of resinfos) {
    const match = /^\s*([A-Za-z0-9_-]+)\s*(?:\/\s*\d+\s*)?=\s*([A-Za-z]+)/.exec(resinfo);
    const method = match?.[1]?.toLowerCase();
    if (method && match?.[2] && results[method] === undefined) results[method] = match[2].toLowerCase();
  }
  return { authservId, results };
}

/** The text without its (possibly nested) comments; quoted strings are kept as they are. */
function withoutComments(text: string): string {
  let out = '';
  let depth = 0;
  let quoted = false;
  for (let index = 0; index < text.length; index++) {
    const character = text[index] ?? '';
    if (character === '\\') {
      if (depth === 0) out += character + (text[index + 1] ?? '');
      index++;
    } else if (quoted) {
      out += character;
      if (character === '"') quoted = false;
    } else if (character === '(') depth++;
    else if (character === ')' && depth > 0) depth--;
    else if (depth === 0) {
      out += character;
      if (character === '"') quoted = true;
    }
  }
  return out;
}

function splitOutsideQuotes(text: string, separator: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (let index = 0; index < text.length; index++) {
    const character = text[index] ?? '';
    if (character === '\\' && quoted) {
      current += character + (text[index + 1] ?? '');
      index++;
      continue;
    }
    if (character === '"') quoted = !quoted;
    if (character === separator && !quoted) {
      parts.push(current);
      current = '';
    } else current += character;
  }
  parts.push(current);
  return parts;
}
