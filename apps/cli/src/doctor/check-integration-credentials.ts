import { type IntegrationInstance, Secret } from '@assistant/config';
import type { DoctorCheck } from './doctor-check.ts';

/** Every secret an integration's settings use (its platforms' too) must be present and not blank. */
export function checkIntegrationCredentials(integration: IntegrationInstance): DoctorCheck {
  const secrets = [
    ...findSecrets(integration.settings, []),
    ...Object.entries(integration.platforms).flatMap(([platform, config]) =>
      findSecrets(config.settings, ['platforms', platform]),
    ),
  ];
  const label = `integration ${integration.name} (${integration.type})`;
  const blank = secrets.filter(({ secret }) => !secret.isSet);
  if (blank.length > 0) {
    return {
      ok: false,
      message: `${label}: ${blank.map(({ key, secret }) => `\`${key}\` (secret ${secret.name})`).join(', ')} ${blank.length === 1 ? 'is' : 'are'} blank`,
      hint: 'put the value in secrets.yaml under the secret name shown',
    };
  }
  return {
    ok: true,
    message:
      secrets.length === 0
        ? `${label}: no credentials configured`
        : `${label}: ${secrets.length} credential${secrets.length === 1 ? '' : 's'} present`,
  };
}

function findSecrets(value: unknown, path: string[]): { key: string; secret: Secret }[] {
  if (value instanceof Secret) return [{ key: path.join('.'), secret: value }];
  if (Array.isArray(value)) return value.flatMap((item, index) => findSecrets(item, [...path, String(index)]));
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, item]) => findSecrets(item, [...path, key]));
  }
  return [];
}
