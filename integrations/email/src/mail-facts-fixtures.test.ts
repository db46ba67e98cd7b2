// The 20 test messages against the facts table in tests/fixtures/mail/README.md: the table is the specification.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { mailFacts } from './mail-facts.ts';

const fixtures = fileURLToPath(new URL('../../../tests/fixtures/mail/', import.meta.url));

interface ExpectedFacts {
  file: string;
  from_domain: string;
  is_noreply: boolean;
  is_calendar_event: boolean;
  has_attachments: boolean;
  has_list_unsubscribe: boolean;
  list_unsubscribe_one_click: boolean;
  is_reply: boolean;
  authentication: string;
}

async function factsTable(): Promise<ExpectedFacts[]> {
  const readme = await readFile(path.join(fixtures, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Deterministic facts'));
  const yes = (cell: string) => cell.startsWith('yes');
  return section
    .split('\n')
    .filter((line) => /^\| `\d\d-/.test(line))
    .map((line) => {
      const cells = line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim());
      const [
        file = '',
        domain = '',
        noreply = '',
        calendar = '',
        attachments = '',
        unsubscribe = '',
        oneClick = '',
        reply = '',
        authentication = '',
      ] = cells;
      return {
        file: file.replaceAll('`', ''),
        from_domain: domain,
        is_noreply: yes(noreply),
        is_calendar_event: yes(calendar),
        has_attachments: yes(attachments),
        has_list_unsubscribe: yes(unsubscribe),
        list_unsubscribe_one_click: yes(oneClick),
        is_reply: yes(reply),
        authentication,
      };
    });
}

describe('mailFacts on the test messages', () => {
  it('gives every message the facts the fixture table lists', async () => {
    const table = await factsTable();
    const files = (await readdir(fixtures)).filter((name) => name.endsWith('.eml')).sort();
    expect(table.map((row) => row.file)).toEqual(files);
    for (const row of table) {
      const parsed = await simpleParser(await readFile(path.join(fixtures, row.file)));
      // The fixtures' receiving server is mx.example.test.
      const facts = mailFacts(parsed, { authservIds: ['mx.example.test'] });
      const { file, ...expected } = row;
      expect({ file, ...pick(facts, Object.keys(expected)) }).toEqual({ file, ...expected });
      expect(facts.message_id, file).toMatch(/^<.+@.+>$/);
      // Without a configured authserv-id no header is trusted.
      expect(mailFacts(parsed).authentication, file).toBe('unknown');
    }
  });
});

function pick(object: object, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.map((key) => [key, (object as Record<string, unknown>)[key]]));
}
