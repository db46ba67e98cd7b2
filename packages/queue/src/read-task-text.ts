import { open } from 'node:fs/promises';
import { TaskFileError } from './task-file.ts';

/**
 * Reads a task file as UTF-8, refusing it without reading it when it is larger than `maxBytes`: a 2 GB file
 * dropped into pending/ must cost a stat, not the worker's memory.
 */
export async function readTaskText(file: string, maxBytes: number): Promise<string> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    if (size > maxBytes) {
      throw new TaskFileError(`file is ${size} bytes; the limit is ${maxBytes} (queue.max_task_bytes)`);
    }
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}
