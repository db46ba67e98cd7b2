import type { ErrorCode } from './codes.ts';

/** Options every Assistant error accepts. */
export interface AssistantErrorOptions {
  /** The error that caused this one. */
  cause?: unknown;
  /** One line telling the reader what to do about it. */
  hint?: string;
}

/**
 * The base class of every error Assistant raises on purpose: a stable `code` that callers and tests match on,
 * an optional `hint`, and the standard `cause`.
 */
export class AssistantError extends Error {
  readonly code: ErrorCode;
  readonly hint: string | undefined;

  constructor(code: ErrorCode, message: string, options: AssistantErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.hint = options.hint;
  }
}

/** True when `value` is an AssistantError, optionally with the given code. */
export function isAssistantError(value: unknown, code?: ErrorCode): value is AssistantError {
  return value instanceof AssistantError && (code === undefined || value.code === code);
}
