import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { UnrecoverableError } from '@assistant/sdk';

/**
 * A local Maildir, as mbsync or offlineimap keep one: the mailbox is `root/{cur,new}`, other folders are Maildir++
 * (`root/.Archive/`) or, when that does not exist but `root/Archive/` does, verbatim subfolders. A message is a file;
 * its name's unique part (before `:2,`) identifies it, and its flags are the letters after `:2,` (F flagged,
 * S seen, D draft, R replied).
 */
export interface MaildirMessage {
  /** The unique part of the file name. */
  id: string;
  file: string;
  flags: string[];
  mtimeMs: number;
}

const flagLetters: Record<string, string> = {
  F: '\\Flagged',
  S: '\\Seen',
  D: '\\Draft',
  R: '\\Answered',
  T: '\\Deleted',
};

/** The maildir setting as an absolute path: `~` is the home folder, a relative path is relative to config.yaml. */
export function resolveMaildir(root: string, configDir: string): string {
  return path.resolve(configDir, root.replace(/^~(?=$|\/)/, os.homedir()));
}

/** The directory of a folder: INBOX is the root. */
export async function folderPath(root: string, folder: string): Promise<string> {
  if (folder.toUpperCase() === 'INBOX') return root;
  const plusPlus = path.join(root, `.${folder}`);
  const verbatim = path.join(root, folder);
  if (await isDirectory(plusPlus)) return plusPlus;
  if (await isDirectory(verbatim)) return verbatim;
  return plusPlus;
}

export async function listMaildir(directory: string): Promise<MaildirMessage[]> {
  if (!(await isDirectory(path.join(directory, 'cur'))) && !(await isDirectory(path.join(directory, 'new')))) {
    throw new UnrecoverableError(`${directory} is not a Maildir (no cur/ or new/ inside)`);
  }
  const messages: MaildirMessage[] = [];
  for (const part of ['new', 'cur']) {
    const names = await readdir(path.join(directory, part)).catch(() => [] as string[]);
    for (const name of names) {
      if (name.startsWith('.')) continue;
      const file = path.join(directory, part, name);
      const info = await stat(file).catch(() => undefined);
      if (!info?.isFile()) continue;
      messages.push({ id: uniquePart(name), file, flags: flagsOf(name), mtimeMs: info.mtimeMs });
    }
  }
  return messages.sort((left, right) => left.mtimeMs - right.mtimeMs || left.id.localeCompare(right.id));
}

/**
 * The message with this unique part, from the folder's names alone: only the match is looked at on disk, so finding
 * one message in a folder of 10,000 costs two directory reads, not 10,000 stats.
 */
export async function findMessage(directory: string, id: string): Promise<MaildirMessage | undefined> {
  if (!(await isDirectory(path.join(directory, 'cur'))) && !(await isDirectory(path.join(directory, 'new')))) {
    throw new UnrecoverableError(`${directory} is not a Maildir (no cur/ or new/ inside)`);
  }
  for (const part of ['new', 'cur']) {
    const names = await readdir(path.join(directory, part)).catch(() => [] as string[]);
    for (const name of names) {
      if (name.startsWith('.') || uniquePart(name) !== id) continue;
      const file = path.join(directory, part, name);
      const info = await stat(file).catch(() => undefined);
      if (info?.isFile()) return { id, file, flags: flagsOf(name), mtimeMs: info.mtimeMs };
    }
  }
  return undefined;
}

export async function readMessage(message: MaildirMessage): Promise<Buffer> {
  return readFile(message.file);
}

/** Moves a message into another folder's cur/, keeping its name (and so its flags). */
export async function moveMessage(message: MaildirMessage, target: string): Promise<string> {
  for (const part of ['cur', 'new', 'tmp']) await mkdir(path.join(target, part), { recursive: true, mode: 0o700 });
  const destination = path.join(target, 'cur', withFlags(message.id, message.flags));
  await rename(message.file, destination);
  return destination;
}

/** Sets the message's flags by renaming it into cur/ with the new info part. */
export async function setFlags(message: MaildirMessage, flags: string[]): Promise<MaildirMessage> {
  const directory = path.dirname(path.dirname(message.file));
  await mkdir(path.join(directory, 'cur'), { recursive: true, mode: 0o700 });
  const destination = path.join(directory, 'cur', withFlags(message.id, flags));
  await rename(message.file, destination);
  return { ...message, file: destination, flags };
}

/** Delivers a message into a folder (tmp/ then rename, as the Maildir rules say), with flags. */
export async function deliver(target: string, content: string | Uint8Array, flags: string[]): Promise<string> {
  for (const part of ['cur', 'new', 'tmp']) await mkdir(path.join(target, part), { recursive: true, mode: 0o700 });
  const id = `${Math.floor(Date.now() / 1000)}.${process.pid}_${randomBytes(4).toString('hex')}.${os.hostname().replace(/[/:]/g, '_')}`;
  const temporary = path.join(target, 'tmp', id);
  await writeFile(temporary, content, { mode: 0o600 });
  const destination = path.join(target, 'cur', withFlags(id, flags));
  await rename(temporary, destination);
  return destination;
}

function uniquePart(name: string): string {
  const index = name.indexOf(':2,');
  return index < 0 ? name : name.slice(0, index);
}

function flagsOf(name: string): string[] {
  const index = name.indexOf(':2,');
  if (index < 0) return [];
  return [...name.slice(index + 3)].flatMap((letter) => (flagLetters[letter] ? [flagLetters[letter]] : [])).sort();
}

function withFlags(id: string, flags: readonly string[]): string {
  const letters = Object.entries(flagLetters)
    .filter(([, flag]) => flags.includes(flag))
    .map(([letter]) => letter)
    .sort()
    .join('');
  return `${id}:2,${letters}`;
}

async function isDirectory(directory: string): Promise<boolean> {
  return (await stat(directory).catch(() => undefined))?.isDirectory() ?? false;
}
