export {
  type FakeChatRequest,
  FakeOpenAiServer,
  type FakeOpenAiServerOptions,
  type FakeReply,
} from './fake-openai-server.ts';
