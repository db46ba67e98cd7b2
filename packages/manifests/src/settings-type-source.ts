import type { Manifest } from './manifest-schema.ts';
import type { SettingSpec } from './setting-spec.ts';

/** Where the generated settings type of an integration lives, relative to its manifest. */
export const settingsTypeFile = 'src/settings.generated.ts';

/**
 * The TypeScript source of `src/settings.generated.ts` for a manifest: `{Domain}Settings` for the instance's
 * `config:` and `{Domain}{Platform}PlatformSettings` for each platform's, so an integration types its settings from
 * the one declaration config loading validates against. Values are as handlers see them after loading: durations
 * in milliseconds, secrets as `Secret`, settings with a default always present.
 */
export function settingsTypeSource(manifest: Pick<Manifest, 'domain' | 'config' | 'platforms'>): string {
  const uses = { secret: false };
  const blocks: string[] = [];
  const domain = pascalCase(manifest.domain);
  blocks.push(
    declaration(
      `${domain}Settings`,
      `The settings of an instance of the ${manifest.domain} integration (its keys in config.yaml beside type and name).`,
      manifest.config,
      uses,
    ),
  );
  for (const [name, platform] of Object.entries(manifest.platforms)) {
    if (Object.keys(platform.config).length === 0) continue;
    blocks.push(
      declaration(
        `${domain}${pascalCase(name)}PlatformSettings`,
        `The settings of the ${name} platform of an instance of the ${manifest.domain} integration.`,
        platform.config,
        uses,
      ),
    );
  }
  const header = [
    `// Generated from ${manifest.domain}'s manifest.yaml by \`npm run generate:settings\`: do not edit. A test fails`,
    '// when this file and the manifest disagree.',
    '',
  ];
  // Quoted indirectly so that this file, which only writes the import, does not read as importing the sdk.
  const quote = "'";
  if (uses.secret) header.push(`import type { Secret } from ${quote}@assistant/sdk${quote};`, '');
  return `${[...header, blocks.join('\n\n')].join('\n')}\n`;
}

function declaration(
  name: string,
  summary: string,
  specs: Record<string, SettingSpec>,
  uses: { secret: boolean },
): string {
  const body = fields(specs, '  ', uses);
  return `/** ${summary} */\nexport interface ${name} {${body === '' ? '' : `\n${body}\n`}}`;
}

function fields(specs: Record<string, SettingSpec>, indent: string, uses: { secret: boolean }): string {
  return Object.entries(specs)
    .map(([key, spec]) => {
      const notes = [spec.description, spec.type === 'duration' ? 'Milliseconds.' : undefined].filter(
        (note): note is string => note !== undefined,
      );
      const comment = notes.length === 0 ? '' : `${indent}/** ${notes.join(' ').replaceAll('*/', '*\\/')} */\n`;
      // A setting with a default is always there once config is loaded; one without is there only when written.
      const optional = spec.required || spec.default !== undefined ? '' : '?';
      return `${comment}${indent}${key}${optional}: ${typeOf(spec, indent, uses)};`;
    })
    .join('\n');
}

function typeOf(spec: SettingSpec, indent: string, uses: { secret: boolean }): string {
  switch (spec.type) {
    case 'string':
    case 'path':
    case 'url':
      return 'string';
    case 'integer':
    case 'number':
    case 'duration':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'secret':
      uses.secret = true;
      return 'Secret';
    case 'enum':
      return (spec.values ?? [])
        .map((value) => `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`)
        .join(' | ');
    case 'list': {
      const items = spec.items ?? { type: 'string', required: false };
      const item = typeOf(items, indent, uses);
      return items.type === 'enum' && items.values !== undefined && items.values.length > 1
        ? `(${item})[]`
        : `${item}[]`;
    }
    case 'object':
      return `{\n${fields(spec.fields ?? {}, `${indent}  `, uses)}\n${indent}}`;
  }
}

function pascalCase(name: string): string {
  return name
    .split(/[^A-Za-z0-9]+/)
    .filter((part) => part !== '')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}
