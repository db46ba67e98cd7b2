import { lookup as dnsLookup } from 'node:dns/promises';
import { isPublicAddress } from './public-address.ts';

/** Where a request may go, checked on every hop: the first request and each redirect. */
export interface OutboundPolicy {
  /** URL schemes a hop may use, with the colon: `['https:']`. */
  readonly protocols: readonly string[];
  /**
   * Whether the request may connect to this IP address. Every address a host name resolves to must pass, and the
   * request connects to a checked one. Products pass {@link isPublicAddress}; only tests pass anything wider.
   */
  allowsAddress(address: string): boolean;
}

/** https: to public internet addresses only: mail's one-click unsubscribe (RFC 8058). */
export const publicHttpsOnly: OutboundPolicy = { protocols: ['https:'], allowsAddress: isPublicAddress };

/** http: and https: to public internet addresses only: reading the web (the research service's `fetch`). */
export const publicWebOnly: OutboundPolicy = { protocols: ['https:', 'http:'], allowsAddress: isPublicAddress };

/** Every address a name resolves to (`dns.lookup` with `all: true`). */
export type LookupAll = (hostname: string) => Promise<{ address: string; family: number }[]>;

/** The system resolver, every address, in the order it gives them. */
export const systemLookup: LookupAll = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });
