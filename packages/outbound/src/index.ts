export { OutboundError, type OutboundRefusal } from './outbound-error.ts';
export { type LookupAll, type OutboundPolicy, publicHttpsOnly, publicWebOnly } from './outbound-policy.ts';
export { isPublicAddress } from './public-address.ts';
export { type SafeFetchOptions, type SafeFetchResult, safeFetch } from './safe-fetch.ts';
export {
  defaultWebhookToleranceMs,
  newWebhookSecret,
  type SignWebhookOptions,
  signWebhook,
  type VerifiedWebhook,
  type VerifyWebhookOptions,
  verifyWebhook,
  WebhookSignatureError,
  type WebhookSignatureRefusal,
  webhookHeaders,
  webhookSecretKey,
  webhookSecretPrefix,
} from './standard-webhooks.ts';
