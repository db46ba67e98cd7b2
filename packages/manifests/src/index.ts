export {
  type DiscoveredIntegration,
  type DiscoverIntegrationsOptions,
  discoverIntegrations,
  type IntegrationOrigin,
  unlistedPackageIntegrations,
} from './discover-integrations.ts';
export {
  handlerReferencePattern,
  type Manifest,
  type ManifestListener,
  type ManifestPlatform,
  type ManifestService,
  type ManifestWebhook,
  manifestSchema,
  type ReversibilityTier,
  reversibilityTiers,
  type WebhookAuthKind,
  webhookAuthKinds,
} from './manifest-schema.ts';
export {
  formatManifestProblem,
  ManifestError,
  type ManifestProblem,
  parseManifest,
  readManifest,
} from './read-manifest.ts';
export { type SettingSpec, type SettingType, settingsShape, settingTypes } from './setting-spec.ts';
export { settingsTypeFile, settingsTypeSource } from './settings-type-source.ts';
