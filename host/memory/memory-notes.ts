import crypto from 'node:crypto';
import { openGuardedRoot } from '../safe-fs/guarded-root.ts';
import type { MemoryNote, MemoryStore } from '../store/memory-store.ts';
import type { Taint } from '../security/taint/taint.ts';

/** Notes live in the group folder, one dated Markdown file each, so the owner can read and edit them. */
export const NOTES_FOLDER = 'memory';
const MAX_NOTE_BYTES = 64 * 1024;

export interface MemoryNotesDeps {
  memory: Pick<MemoryStore, 'putNote' | 'note' | 'notes' | 'deleteNote'>;
  /** The group's folder on the host (the one its containers mount). */
  groupDir(groupId: string): string;
  now?: () => Date;
}

export interface NoteWrite {
  groupId: string;
  text: string;
  author: 'owner' | 'agent';
  runId?: number;
  /** The writer's taint: every later recall of the note carries it. */
  taint: Taint;
}

function slug(text: string): string {
  const words = text.toLowerCase().match(/[a-z0-9]+/g) ?? [];
  return words.slice(0, 6).join('-').slice(0, 48) || 'note';
}

/**
 * Writes and removes notes as files (`memory/<date>-<slug>-<tag>.md` in the group folder) and keeps their
 * indexed copy in the store. The group folder is the containers' too, so every file operation goes
 * through the guarded root: a `memory` folder a run swapped for a symlink steers nothing outside it.
 */
export function createMemoryNotes(deps: MemoryNotesDeps) {
  const now = deps.now ?? (() => new Date());
  const root = (groupId: string) =>
    openGuardedRoot(deps.groupDir(groupId), { create: { mode: 0o755 }, label: 'the group folder' });

  return {
    async write(n: NoteWrite): Promise<MemoryNote> {
      const day = now().toISOString().slice(0, 10);
      const tag = crypto.randomBytes(3).toString('hex');
      const relPath = `${NOTES_FOLDER}/${day}-${slug(n.text)}-${tag}.md`;
      const text = n.text.trim();
      const folder = await root(n.groupId);
      await folder.writeFileAtomic(relPath, Buffer.from(`${text}\n`, 'utf8'), {
        mode: 0o644,
        dirMode: 0o755,
      });
      const id = deps.memory.putNote({
        groupId: n.groupId,
        path: relPath,
        text,
        author: n.author,
        ...(n.runId !== undefined ? { runId: n.runId } : {}),
        taint: n.taint,
      });
      const note = deps.memory.note(id);
      if (!note) throw new Error(`note ${id} vanished as it was written`);
      return note;
    },

    /** Removes a note of this group: its file, then its row (and with it, by trigger, its index entry). */
    async forget(groupId: string, noteId: number): Promise<boolean> {
      const note = deps.memory.note(noteId);
      if (!note || note.groupId !== groupId) return false;
      const folder = await root(groupId);
      await folder.remove(note.path).catch((err: NodeJS.ErrnoException) => {
        // Already gone (the owner deleted the file by hand): the row still goes.
        if (err.code !== 'ENOENT') throw err;
      });
      return deps.memory.deleteNote(noteId);
    },

    /**
     * Reads each note's file again and stores what it says now (an owner's edit by hand). A file that
     * changed is taken as written by the group's runs, which can write the same folder: `whoCouldWrite`
     * is that taint. A note whose file is gone is forgotten.
     */
    async syncFromFiles(
      groupId: string,
      whoCouldWrite: Taint,
    ): Promise<{ changed: number; removed: number }> {
      const folder = await root(groupId);
      let changed = 0;
      let removed = 0;
      for (const note of deps.memory.notes(groupId)) {
        const file = await folder.readFile(note.path, { maxBytes: MAX_NOTE_BYTES }).catch(() => undefined);
        if (!file) {
          deps.memory.deleteNote(note.id);
          removed += 1;
          continue;
        }
        const text = file.bytes.toString('utf8').trim();
        if (text === note.text) continue;
        deps.memory.putNote({ groupId, path: note.path, text, author: 'agent', taint: whoCouldWrite });
        changed += 1;
      }
      return { changed, removed };
    },
  };
}

export type MemoryNotes = ReturnType<typeof createMemoryNotes>;
