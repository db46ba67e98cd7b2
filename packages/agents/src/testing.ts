export { type FakeAnswer, FakeSubAgents, type FakeSubAgentsOptions } from './workflows/testing/fake-subagents.ts';
