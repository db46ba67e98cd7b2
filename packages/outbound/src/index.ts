export { OutboundError, type OutboundRefusal } from './outbound-error.ts';
export { type LookupAll, type OutboundPolicy, publicHttpsOnly, publicWebOnly } from './outbound-policy.ts';
export { isPublicAddress } from './public-address.ts';
export { type SafeFetchOptions, type SafeFetchResult, safeFetch } from './safe-fetch.ts';
