export { AssistantError, type AssistantErrorOptions, isAssistantError } from './assistant-error.ts';
export { type ErrorCode, errorCodes, isErrorCode } from './codes.ts';
export { clearSecretValues, registerSecretValue, scrubSecrets, scrubSecretsDeep } from './scrub-secrets.ts';
