import { AssistantError } from '@assistant/errors';

/** Why a request was refused: before it was made (the URL, its address) or while its answer was read. */
export type OutboundRefusal =
  | 'not_url'
  | 'scheme'
  | 'credentials'
  | 'address'
  | 'redirects'
  | 'content_type'
  | 'too_large';

/**
 * A request of {@link safeFetch} that was refused (`OUTBOUND_REFUSED`: asking again will not help) or failed
 * (`OUTBOUND_FAILED`: the name did not resolve, the connection broke, the deadline passed). `connected` tells the
 * caller of a request that acts (a POST) whether the server may have received it.
 */
export class OutboundError extends AssistantError {
  /** The URL of the hop where it happened. */
  readonly url: string;
  /** Set for `OUTBOUND_REFUSED`. */
  readonly refusal: OutboundRefusal | undefined;
  /** Whether a connection to a server was made before it happened, on this hop or an earlier one. */
  readonly connected: boolean;
  /** Whether the deadline (`timeoutMs`) passed. */
  readonly timedOut: boolean;

  constructor(
    message: string,
    details: { url: string; refusal?: OutboundRefusal; connected: boolean; timedOut?: boolean; cause?: unknown },
  ) {
    super(details.refusal ? 'OUTBOUND_REFUSED' : 'OUTBOUND_FAILED', message, { cause: details.cause });
    this.url = details.url;
    this.refusal = details.refusal;
    this.connected = details.connected;
    this.timedOut = details.timedOut ?? false;
  }
}
