export { durationExamples, formatDuration, parseDuration } from '@assistant/queue';
export { configJsonSchema } from './json-schema.ts';
export {
  type ConfigCheckProblem,
  ConfigError,
  type ConfigPaths,
  type LoadConfigOptions,
  type LoadConfigResult,
  type LoadedConfig,
  loadConfig,
  type ParseConfigOptions,
  type ParseConfigResult,
  parseConfig,
  readConfigFile,
} from './load-config.ts';
export { isLoopbackHost } from './loopback.ts';
export { machineTimeZone } from './machine-time-zone.ts';
export type { McpHttpServerConfig, McpServerConfig, McpStdioServerConfig } from './mcp-servers-schema.ts';
export {
  type ParseAutomationsOptions,
  type ParseAutomationsResult,
  parseAutomations,
} from './parse-automations.ts';
export {
  type ConfigPath,
  type ConfigProblem,
  formatPath,
  formatProblem,
  nearest,
  type SourcePosition,
  sortProblems,
} from './problems.ts';
export { type NextRunsOptions, nextRuns, type Schedule, validateCron } from './schedule.ts';
export {
  type Action,
  type Automation,
  buildConfigSchema,
  type Classification,
  type Config,
  type ConfigSchemaOptions,
  classificationSchema,
  defaultLlmBaseUrls,
  duration as durationSchema,
  type EmbeddingsConfig,
  type IntegrationConfigSchema,
  type IntegrationInstance,
  identifier as identifierSchema,
  instanceName as instanceNameSchema,
  type JsonValue,
  jsonValue as jsonValueSchema,
  type LlmPrices,
  type LlmProfile,
  type LlmProvider,
  llmProviders,
  type MemoryConfig,
  type MemoryDomain,
  memoryDomains,
  type OwnerConfig,
  type PlatformConfig,
  type QueueConfig,
  type QueuePolicy,
  type ScriptConfig,
  scheduleSchema,
  secretField,
  serviceCall as serviceCallSchema,
  toolPattern as toolPatternSchema,
  type WhenConditions,
  whenSchema as whenConditionsSchema,
} from './schema.ts';
export { Secret } from './secret.ts';
export { configData, serializeConfig, toYamlText } from './serialize-config.ts';
export { refuseUrlCredentials } from './url-credentials.ts';
export { readYaml, type YamlSource, yamlLimitProblem } from './yaml-source.ts';
export { Yolo } from './yolo.ts';
export { issuesToProblems, recordSchemas } from './zod-problems.ts';
