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
  type ManifestPlatform,
  type ManifestService,
  manifestSchema,
  type ReversibilityTier,
  reversibilityTiers,
} from './manifest-schema.ts';
export {
  formatManifestProblem,
  ManifestError,
  type ManifestProblem,
  parseManifest,
  readManifest,
} from './read-manifest.ts';
export { type SettingSpec, type SettingType, settingsShape, settingTypes } from './setting-spec.ts';
