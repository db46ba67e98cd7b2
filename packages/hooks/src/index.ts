export type { CompiledHook, HookAction, HookCheck, HookDecision, HookTier } from './hook-types.ts';
