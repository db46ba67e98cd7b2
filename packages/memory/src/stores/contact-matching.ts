import type { Contact } from '../memory-types.ts';

/** Addresses compare in lower case, without spaces or angle brackets. */
export function normaliseEmail(value: string): string {
  return value.trim().replace(/^<|>$/g, '').toLowerCase();
}

/** Handles compare in lower case, without a leading `@`. */
export function normaliseHandle(value: string): string {
  return value.trim().replace(/^@/, '').toLowerCase();
}

/** A name's words: diacritics, case and punctuation dropped (`Zoë O'Brien-Li` → `zoe obrien li`). */
function nameTokens(name: string): string[] {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/['’]/g, '')
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/** Jaro-Winkler similarity of two words, 0..1. */
function jaroWinkler(left: string, right: string): number {
  if (left === right) return 1;
  if (left.length === 0 || right.length === 0) return 0;
  const window = Math.max(0, Math.floor(Math.max(left.length, right.length) / 2) - 1);
  const leftMatched = new Array<boolean>(left.length).fill(false);
  const rightMatched = new Array<boolean>(right.length).fill(false);
  let matches = 0;
  for (let i = 0; i < left.length; i += 1) {
    const start = Math.max(0, i - window);
    const end = Math.min(i + window + 1, right.length);
    for (let j = start; j < end; j += 1) {
      if (rightMatched[j] || left[i] !== right[j]) continue;
      leftMatched[i] = true;
      rightMatched[j] = true;
      matches += 1;
      break;
    }
  }
  if (matches === 0) return 0;
  let transpositions = 0;
  let k = 0;
  for (let i = 0; i < left.length; i += 1) {
    if (!leftMatched[i]) continue;
    while (!rightMatched[k]) k += 1;
    if (left[i] !== right[k]) transpositions += 1;
    k += 1;
  }
  const jaro = (matches / left.length + matches / right.length + (matches - transpositions / 2) / matches) / 3;
  let prefix = 0;
  while (prefix < 4 && left[prefix] !== undefined && left[prefix] === right[prefix]) prefix += 1;
  return jaro + prefix * 0.1 * (1 - jaro);
}

/**
 * How alike two words of names are: the same word 1, an initial and a word it starts 0.9 (`m.` ~ `martin`), a near
 * spelling its Jaro-Winkler score (`jon` ~ `john`), anything below 0.85 counts as a different word (`bob` vs `rob`).
 */
function tokenSimilarity(left: string, right: string): number {
  if (left === right) return 1;
  if ((left.length === 1 && right.startsWith(left)) || (right.length === 1 && left.startsWith(right))) return 0.9;
  const score = jaroWinkler(left, right);
  return score >= 0.85 ? score : 0;
}

function coverage(from: string[], to: string[]): number {
  if (from.length === 0) return 0;
  let total = 0;
  for (const token of from) total += Math.max(0, ...to.map((other) => tokenSimilarity(token, other)));
  return total / from.length;
}

/**
 * Name similarity, 0..1, token based and symmetric: each word of one name is matched with its best word of the
 * other, both ways, and the two coverages averaged. `Alice Martin` ~ `alice m.` 0.95; `Martin, Alice` ~ `Alice
 * Martin` 1; `Alice` ~ `Alice Martin` 0.75 (a first name alone is a weak hint); `Bob Smith` ~ `Rob Smith` 0.5.
 */
export function nameSimilarity(left: string, right: string): number {
  const leftTokens = nameTokens(left);
  const rightTokens = nameTokens(right);
  if (leftTokens.length === 0 || rightTokens.length === 0) return 0;
  return (coverage(leftTokens, rightTokens) + coverage(rightTokens, leftTokens)) / 2;
}

/**
 * The word a lone first name would be matched on: `Lena` ~ `Lena Fischer` gives `lena` when one of the two names is
 * a single word and it is the other's first word; undefined otherwise.
 */
export function loneFirstName(left: string, right: string): string | undefined {
  const leftTokens = nameTokens(left);
  const rightTokens = nameTokens(right);
  if (leftTokens.length === 0 || rightTokens.length === 0) return undefined;
  if (leftTokens.length !== 1 && rightTokens.length !== 1) return undefined;
  return leftTokens[0] === rightTokens[0] ? leftTokens[0] : undefined;
}

/** The first word of each name of a contact (name, aliases). */
export function firstNames(contact: Contact): string[] {
  return [contact.name, ...contact.aliases].map((name) => nameTokens(name)[0]).filter((token) => token !== undefined);
}

/** Mail providers anyone can have an address at: a shared domain there says nothing about a person. */
const publicMailDomains = new Set([
  'gmail.com',
  'googlemail.com',
  'outlook.com',
  'hotmail.com',
  'live.com',
  'yahoo.com',
  'icloud.com',
  'me.com',
  'proton.me',
  'protonmail.com',
  'gmx.de',
  'gmx.net',
  'web.de',
  'aol.com',
  'fastmail.com',
  'posteo.de',
]);

function domainOf(email: string): string | undefined {
  const domain = normaliseEmail(email).split('@')[1];
  return domain && !publicMailDomains.has(domain) ? domain : undefined;
}

function organisationKey(value: string): string {
  return nameTokens(value)
    .filter((token) => !['inc', 'ltd', 'gmbh', 'llc', 'sa', 'ag', 'co', 'corp', 'the'].includes(token))
    .join(' ');
}

/**
 * Whether what the query says about where the person works agrees with the contact: `true` (same organisation, or a
 * shared non-public mail domain, or a domain that names the organisation), `false` (both known and different),
 * `undefined` (nothing to compare).
 */
export function organisationAgrees(options: {
  query: { organisation?: string | undefined; email?: string | undefined };
  contact: Contact;
}): boolean | undefined {
  const { query, contact } = options;
  const queryOrganisation = query.organisation ? organisationKey(query.organisation) : '';
  const contactOrganisation = contact.organisation ? organisationKey(contact.organisation) : '';
  const queryDomain = query.email ? domainOf(query.email) : undefined;
  const contactDomains = [
    ...contact.emails,
    ...contact.observed.filter((seen) => seen.kind === 'email').map((seen) => seen.value),
  ]
    .map(domainOf)
    .filter((domain): domain is string => domain !== undefined);
  const domainNames = (domain: string, organisation: string) =>
    organisation !== '' && domain.split('.').some((label) => label === organisation.replace(/ /g, ''));
  let compared = false;
  if (queryOrganisation && contactOrganisation) {
    if (queryOrganisation === contactOrganisation) return true;
    compared = true;
  }
  if (queryDomain && contactDomains.length > 0) {
    if (contactDomains.includes(queryDomain)) return true;
    compared = true;
  }
  if (queryDomain && domainNames(queryDomain, contactOrganisation)) return true;
  if (queryOrganisation && contactDomains.some((domain) => domainNames(domain, queryOrganisation))) return true;
  return compared ? false : undefined;
}
