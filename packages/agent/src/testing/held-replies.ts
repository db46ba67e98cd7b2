import type { ChatRequest } from '@assistant/llm';
import type { ScriptedReply, ScriptedResponder } from './scripted-model.ts';

/** A scripted responder whose calls wait until the test answers them. */
export interface HeldReplies {
  /** Pass as `replies` to `createScriptedModel`. */
  responder: ScriptedResponder;
  /** Resolves when call `index` (counting from 0) has arrived and is waiting. */
  inFlight(index: number): Promise<void>;
  /** Answers call `index`; may come before the call arrives. */
  reply(index: number, reply: ScriptedReply): void;
}

/**
 * Holds every model call in flight until the test answers it, so a test can steer a loop at an exact point ("while
 * the second call is in flight") without sleeping.
 */
export function createHeldReplies(): HeldReplies {
  const replies: Array<PromiseWithResolvers<ScriptedReply>> = [];
  const arrivals: Array<PromiseWithResolvers<void>> = [];
  const slot = <Value>(list: Array<PromiseWithResolvers<Value>>, index: number): PromiseWithResolvers<Value> => {
    while (list.length <= index) list.push(Promise.withResolvers<Value>());
    const found = list[index];
    if (found === undefined) throw new RangeError(`Expected a call index of 0 or more, got ${index}`);
    return found;
  };
  return {
    responder: (_request: ChatRequest, call) => {
      slot(arrivals, call.index).resolve();
      return slot(replies, call.index).promise;
    },
    inFlight: (index) => slot(arrivals, index).promise,
    reply: (index, reply) => slot(replies, index).resolve(reply),
  };
}
