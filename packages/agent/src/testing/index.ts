// Helpers for tests of code that runs agent loops; not part of the runtime surface.
export { createEventRecorder, type EventRecorder, type WaitForEventOptions } from './event-recorder.ts';
export { createHeldReplies, type HeldReplies } from './held-replies.ts';
export { createMemoryTranscriptStore, type MemoryTranscriptStore } from './memory-transcript-store.ts';
export {
  createScriptedModel,
  type ScriptedModel,
  type ScriptedModelOptions,
  type ScriptedReply,
  type ScriptedResponder,
  type ScriptedToolCall,
} from './scripted-model.ts';
export { settle } from './settle.ts';
