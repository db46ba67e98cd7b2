import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { mailFixtureDirectory } from './imap-client.ts';

/** What a classifier should say about one mail fixture, from the fixture README's table. */
export interface Judgement {
  file: string;
  subject: string;
  human: boolean;
  requiresResponse: boolean;
  newsletter: boolean;
}

/** The fixture README's table of what a classifier should say, by subject. */
export async function judgements(): Promise<Judgement[]> {
  const readme = await readFile(path.join(mailFixtureDirectory, 'README.md'), 'utf8');
  const table = readme.slice(
    readme.indexOf('## What a classifier should say'),
    readme.indexOf('## Deterministic facts'),
  );
  return table
    .split('\n')
    .filter((line) => /^\| `\d\d-/.test(line))
    .map((line) => {
      const cells = line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim());
      return {
        file: (cells[0] ?? '').replaceAll('`', ''),
        subject: cells[3] ?? '',
        human: (cells[4] ?? '').startsWith('yes'),
        requiresResponse: (cells[5] ?? '').startsWith('yes'),
        newsletter: (cells[6] ?? '').startsWith('yes'),
      };
    });
}
