import type { NoteStore } from '@assistant/notes';
import type { MemoryProblem, OwnerTask } from '../memory-types.ts';

export interface NewOwnerTask {
  title: string;
  /** `YYYY-MM-DD` or an ISO instant. */
  due?: string;
  about?: string[];
  source?: string;
  createdBy: OwnerTask['created_by'];
  body?: string;
}

export interface OwnerTaskStore {
  /** `dueBefore`: tasks with a due date before this (`YYYY-MM-DD` or instant); undated ones are left out. */
  list(options?: {
    status?: OwnerTask['status'];
    dueBefore?: string;
  }): Promise<{ tasks: OwnerTask[]; problems: MemoryProblem[] }>;
  get(id: string): Promise<OwnerTask | undefined>;
  /** Idempotent for extraction: the id is a hash of source and title. */
  add(task: NewOwnerTask): Promise<OwnerTask>;
  update(
    id: string,
    changes: { status?: OwnerTask['status']; due?: string | null; title?: string },
  ): Promise<OwnerTask>;
}

export function ownerTaskStore(_options: { notes: NoteStore }): OwnerTaskStore {
  throw new Error('not implemented yet');
}
