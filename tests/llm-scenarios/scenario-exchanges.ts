import { extractedFactId } from '../../packages/memory/src/stores/fact-store.ts';
import {
  type AdaptedExchange,
  anthropicBody,
  anthropicStream,
  geminiBody,
  geminiStream,
  openAiBody,
  openAiStream,
} from './adapt-captures.ts';
import {
  agentCodeProgram,
  emailNote,
  expectedAnswers,
  memoryExtractAnswer,
  memoryOldFactSource,
  type ScenarioName,
} from './scenarios.ts';

/** The providers the scenario suite runs on, each with the model its fixtures are recorded for. */
export const scenarioProviders = {
  anthropic: { model: 'claude-sonnet-4-5' },
  google: { model: 'gemini-3-pro-preview' },
  'openai-compatible': { model: 'deepseek-reasoner' },
} as const;
export type ScenarioProvider = keyof typeof scenarioProviders;

/**
 * What a provider answers to one request of a scenario. Most are fixed; the structured answer of Anthropic depends on
 * how the adapter asked for it (the tool it forces, or JSON text), so it is built from the request.
 */
export type ExchangeBuilder = (request: { body: Record<string, unknown> | undefined }) => AdaptedExchange;

const contactArguments = { name: 'Ana' };
const meetingArguments = { email: emailNote.from.replace(/^.*<|>$/g, '') };
const forecastArguments = { city: 'Lisbon' };
/** `agent-code`'s one tool call: the program as run_code's argument. */
const codeArguments = { code: agentCodeProgram };
const recallArguments = { query: 'dentist appointment' };
const classification = JSON.stringify(expectedAnswers['email-classify']);
/** `memory-extract`'s answer with the old fact's real id (deterministic: from its source and statement). */
const memoryAnswer = JSON.parse(
  JSON.stringify(memoryExtractAnswer).replace(
    '{{old}}',
    extractedFactId({ source: memoryOldFactSource, statement: expectedAnswers['memory-extract'].superseded[0] }),
  ),
) as Record<string, unknown>;
const memoryAnswerText = JSON.stringify(memoryAnswer);
const [switchAnswer, switchAfterAnswer] = expectedAnswers['provider-switch'];
const thinkingBeforeTool =
  'The owner asks whether it will rain in Lisbon tomorrow morning. I should get the forecast for Lisbon first.';
const thinkingBeforeAnswer =
  'The forecast says 14 °C with light rain in the morning and a dry afternoon. Answer about the morning run.';

const fixed =
  (exchange: AdaptedExchange): ExchangeBuilder =>
  () =>
    exchange;

/**
 * The answers of each scenario on each provider, in the order the scenario asks. `provider-switch` is split: its
 * first two answers come from the provider itself, its third from the provider it switches to
 * (`provider-switch/after`, recorded under that provider's directory).
 */
export function scenarioExchanges(
  provider: ScenarioProvider,
  scenario: ScenarioName | 'provider-switch/after',
): ExchangeBuilder[] {
  switch (provider) {
    case 'anthropic':
      return anthropicExchanges(scenario);
    case 'google':
      return googleExchanges(scenario);
    case 'openai-compatible':
      return openAiExchanges(scenario);
  }
}

function anthropicExchanges(scenario: ScenarioName | 'provider-switch/after'): ExchangeBuilder[] {
  switch (scenario) {
    case 'email-classify':
      return [
        (request) => {
          // The adapter forces a tool for structured answers (Anthropic's way to hold a model to a schema); answer
          // with that tool, or with JSON text when it asked without one.
          const choice = request.body?.tool_choice as { type?: string; name?: string } | undefined;
          return choice?.type === 'tool' && typeof choice.name === 'string'
            ? anthropicBody('anthropic-json-tool.1.json', {
                toolUse: { name: choice.name, input: expectedAnswers['email-classify'] },
              })
            : anthropicBody('anthropic-json-tool.1.json', { text: classification });
        },
      ];
    case 'memory-extract':
      return [
        (request) => {
          const choice = request.body?.tool_choice as { type?: string; name?: string } | undefined;
          return choice?.type === 'tool' && typeof choice.name === 'string'
            ? anthropicBody('anthropic-json-tool.1.json', { toolUse: { name: choice.name, input: memoryAnswer } })
            : anthropicBody('anthropic-json-tool.1.json', { text: memoryAnswerText });
        },
      ];
    case 'memory-recall':
      return [
        fixed(
          anthropicStream('anthropic-tool-no-args.chunks.txt', {
            text: "I'll look that up in your memory.",
            toolUse: { name: 'recall', input: recallArguments },
          }),
        ),
        fixed(anthropicStream('anthropic-text.chunks.txt', { text: expectedAnswers['memory-recall'] })),
      ];
    case 'chat-tool-stream':
      return [
        fixed(
          anthropicStream('anthropic-tool-no-args.chunks.txt', {
            text: "I'll look Ana up in your contacts.",
            toolUse: { name: 'lookup_contact', input: contactArguments },
          }),
        ),
        fixed(anthropicStream('anthropic-text.chunks.txt', { text: expectedAnswers['chat-tool-stream'] })),
      ];
    case 'agent-two-tools':
      return [
        fixed(
          anthropicStream('anthropic-tool-no-args.chunks.txt', {
            text: "I'll look Ana up first.",
            toolUse: { name: 'lookup_contact', input: contactArguments },
          }),
        ),
        fixed(
          anthropicStream('anthropic-json-tool.1.chunks.txt', {
            toolUse: { name: 'next_meeting', input: meetingArguments },
          }),
        ),
        fixed(anthropicStream('anthropic-text.chunks.txt', { text: expectedAnswers['agent-two-tools'] })),
      ];
    case 'agent-code':
      return [
        fixed(
          anthropicStream('anthropic-tool-no-args.chunks.txt', {
            text: "I'll look Ana up and find the meeting in one program.",
            toolUse: { name: 'run_code', input: codeArguments },
          }),
        ),
        fixed(anthropicStream('anthropic-text.chunks.txt', { text: expectedAnswers['agent-code'] })),
      ];
    case 'provider-switch':
      return [
        fixed(
          anthropicStream('anthropic-tool-no-args.chunks.txt', {
            thinkingFrom: 'anthropic-clear-thinking.1.chunks.txt',
            thinking: thinkingBeforeTool,
            text: "I'll check the forecast for Lisbon.",
            toolUse: { name: 'get_forecast', input: forecastArguments },
          }),
        ),
        fixed(
          anthropicStream('anthropic-clear-thinking.1.chunks.txt', {
            thinking: thinkingBeforeAnswer,
            text: switchAnswer,
          }),
        ),
      ];
    case 'provider-switch/after':
      return [fixed(anthropicStream('anthropic-text.chunks.txt', { text: switchAfterAnswer }))];
  }
}

function googleExchanges(scenario: ScenarioName | 'provider-switch/after'): ExchangeBuilder[] {
  switch (scenario) {
    case 'email-classify':
      return [fixed(geminiBody('google-text.json', classification))];
    case 'memory-extract':
      return [fixed(geminiBody('google-text.json', memoryAnswerText))];
    case 'memory-recall':
      return [
        fixed(geminiStream('google-tool-call.chunks.txt', { functionCall: { name: 'recall', args: recallArguments } })),
        fixed(geminiStream('google-text.chunks.txt', { text: expectedAnswers['memory-recall'] })),
      ];
    case 'chat-tool-stream':
      return [
        fixed(
          geminiStream('google-tool-call.chunks.txt', {
            functionCall: { name: 'lookup_contact', args: contactArguments },
          }),
        ),
        fixed(geminiStream('google-text.chunks.txt', { text: expectedAnswers['chat-tool-stream'] })),
      ];
    case 'agent-two-tools':
      return [
        fixed(
          geminiStream('google-tool-call.chunks.txt', {
            functionCall: { name: 'lookup_contact', args: contactArguments },
          }),
        ),
        fixed(
          geminiStream('google-tool-call-gemini3.chunks.txt', {
            functionCall: { name: 'next_meeting', args: meetingArguments },
          }),
        ),
        fixed(geminiStream('google-text.chunks.txt', { text: expectedAnswers['agent-two-tools'] })),
      ];
    case 'agent-code':
      return [
        fixed(geminiStream('google-tool-call.chunks.txt', { functionCall: { name: 'run_code', args: codeArguments } })),
        fixed(geminiStream('google-text.chunks.txt', { text: expectedAnswers['agent-code'] })),
      ];
    case 'provider-switch':
      return [
        fixed(
          geminiStream('google-tool-call.chunks.txt', {
            thought: thinkingBeforeTool,
            functionCall: { name: 'get_forecast', args: forecastArguments },
          }),
        ),
        fixed(geminiStream('google-reasoning.chunks.txt', { thought: thinkingBeforeAnswer, text: switchAnswer })),
      ];
    case 'provider-switch/after':
      return [fixed(geminiStream('google-text.chunks.txt', { text: switchAfterAnswer }))];
  }
}

function openAiExchanges(scenario: ScenarioName | 'provider-switch/after'): ExchangeBuilder[] {
  switch (scenario) {
    case 'email-classify':
      return [
        fixed(
          openAiBody('deepseek-json.json', {
            text: classification,
            reasoning:
              'A personal invitation from Ana that asks for an answer by Wednesday; not a newsletter, not for today.',
          }),
        ),
      ];
    case 'memory-extract':
      return [
        fixed(
          openAiBody('deepseek-json.json', {
            text: memoryAnswerText,
            reasoning:
              'The practice moved the appointment from Tuesday to Friday at 10:30; that replaces the known fact. The owner is asked to confirm by Wednesday.',
          }),
        ),
      ];
    case 'memory-recall':
      return [
        fixed(
          openAiStream('deepseek-tool-call.chunks.txt', {
            reasoning: 'The owner asks about the dentist appointment. I should recall it from memory.',
            toolCall: { name: 'recall', arguments: recallArguments },
          }),
        ),
        fixed(
          openAiStream('deepseek-reasoning.chunks.excerpt.txt', {
            reasoning: 'The newest fact says Friday 4 December at 10:30; the Tuesday one is superseded.',
            text: expectedAnswers['memory-recall'],
          }),
        ),
      ];
    case 'chat-tool-stream':
      return [
        fixed(
          openAiStream('deepseek-tool-call.chunks.txt', {
            reasoning: 'The owner wants Ana’s phone number. I should look her up in the contacts.',
            toolCall: { name: 'lookup_contact', arguments: contactArguments },
          }),
        ),
        fixed(
          openAiStream('deepseek-reasoning.chunks.excerpt.txt', {
            reasoning: 'The contact has the phone number. Answer in one sentence.',
            text: expectedAnswers['chat-tool-stream'],
          }),
        ),
      ];
    case 'agent-two-tools':
      return [
        fixed(
          openAiStream('deepseek-tool-call.chunks.txt', {
            reasoning: 'First I look Ana up to get her email address.',
            toolCall: { name: 'lookup_contact', arguments: contactArguments },
          }),
        ),
        fixed(
          openAiStream('deepseek-tool-call.chunks.txt', {
            reasoning: 'Now I find the next meeting by her email address.',
            toolCall: { name: 'next_meeting', arguments: meetingArguments, id: 'call_01_ioIn7yN9p1ZOMNpDLwd4MgAF' },
          }),
        ),
        fixed(
          openAiStream('deepseek-reasoning.chunks.excerpt.txt', {
            reasoning: 'I have the contact and the meeting. Answer briefly.',
            text: expectedAnswers['agent-two-tools'],
          }),
        ),
      ];
    case 'agent-code':
      return [
        fixed(
          openAiStream('deepseek-tool-call.chunks.txt', {
            reasoning: 'One program can look Ana up and then find the meeting by her email address.',
            toolCall: { name: 'run_code', arguments: codeArguments },
          }),
        ),
        fixed(
          openAiStream('deepseek-reasoning.chunks.excerpt.txt', {
            reasoning: 'The program returned her email address and the meeting. Answer briefly.',
            text: expectedAnswers['agent-code'],
          }),
        ),
      ];
    case 'provider-switch':
      return [
        fixed(
          openAiStream('deepseek-tool-call.chunks.txt', {
            reasoning: thinkingBeforeTool,
            toolCall: { name: 'get_forecast', arguments: forecastArguments },
          }),
        ),
        fixed(
          openAiStream('deepseek-reasoning.chunks.excerpt.txt', {
            reasoning: thinkingBeforeAnswer,
            text: switchAnswer,
          }),
        ),
      ];
    case 'provider-switch/after':
      return [
        fixed(
          openAiStream('deepseek-reasoning.chunks.excerpt.txt', {
            reasoning: 'The afternoon is dry at 19 °C. Say so.',
            text: switchAfterAnswer,
          }),
        ),
      ];
  }
}
