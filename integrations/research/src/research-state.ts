import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as z from 'zod';
import { finishInput } from './research-report.ts';

const stateSchema = z.object({
  version: z.literal(1),
  pages: z.array(
    z.object({ n: z.int(), url: z.string(), finalUrl: z.string(), title: z.string(), retrievedAt: z.string() }),
  ),
  finish: finishInput.optional(),
});

/** What one research task has gathered so far: the pages it read, by number, and the model's `finish`. */
export type ResearchState = Omit<z.infer<typeof stateSchema>, 'version'>;

/**
 * A research task's pages and `finish`, kept beside its transcript (`<data>/research/<task id>.json`). The loop
 * resumes from its transcript after a crash or a retry (the model was down, the search provider was down): without
 * this the page numbers the model already cites would be given again to other pages. Written whole under a
 * temporary name and renamed, so a crash leaves the old state or the new one.
 */
export function researchStateFile(options: { dataDir: string; taskId: string }) {
  const file = path.join(options.dataDir, 'research', `${options.taskId}.json`);
  let saving: Promise<void> = Promise.resolve();
  return {
    file,
    /** The saved state; an empty one when there is none (or it cannot be read: its pages then stay uncited). */
    async load(): Promise<ResearchState> {
      const text = await readFile(file, 'utf8').catch(() => undefined);
      if (text === undefined) return { pages: [] };
      try {
        const { version: _version, ...state } = stateSchema.parse(JSON.parse(text));
        return state;
      } catch {
        return { pages: [] };
      }
    },
    /** Saves one state after another, in call order. */
    save(state: ResearchState): Promise<void> {
      const write = async () => {
        await mkdir(path.dirname(file), { recursive: true });
        const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
        await writeFile(tmp, JSON.stringify({ version: 1, ...state }), { mode: 0o600 });
        await rename(tmp, file);
      };
      saving = saving.then(write, write);
      return saving;
    },
    /** Once the result is handed in: nothing will resume from it. */
    async remove(): Promise<void> {
      await saving.catch(() => {});
      await rm(file, { force: true });
    },
  };
}
