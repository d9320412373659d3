/**
 * The group's conversation on disk: `<session>/history.jsonl`, one message per line, appended as the
 * run goes (so a killed agent loses at most the message it was writing) and rewritten atomically when
 * compacted. The file is inside a container-writable mount, so every line is validated on load. It is the
 * agent's alone (0600 in a 0700 folder): commands run under another uid with the agent's gid, and a file
 * one of them could write would be a conversation the next run takes as its own. A history file that is not
 * a regular file of this uid (left by an older image, or planted) is set aside, never loaded.
 */
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import * as z from 'zod';
import { conversationMessageSchema, sanitizeConversation, type ConversationMessage } from './conversation.ts';

const HISTORY_VERSION = 1;
const PRIVATE_FILE = 0o600;
const historyLineSchema = z
  .object({ v: z.literal(HISTORY_VERSION), at: z.string(), message: conversationMessageSchema })
  .strict();

export interface HistoryStore {
  readonly file: string;
  /** The stored conversation, with unreadable lines skipped and tool calls paired up. */
  load(): Promise<{ messages: ConversationMessage[]; skippedLines: number; setAside?: string }>;
  append(messages: readonly ConversationMessage[]): Promise<void>;
  /** Replaces the whole file (write to a temporary file, then rename). */
  replace(messages: readonly ConversationMessage[]): Promise<void>;
}

export function createHistoryStore(options: { sessionDir: string; now: () => Date }): HistoryStore {
  const file = path.join(options.sessionDir, 'history.jsonl');
  const encode = (messages: readonly ConversationMessage[]): string => {
    const at = options.now().toISOString();
    return messages.map((message) => JSON.stringify({ v: HISTORY_VERSION, at, message }) + '\n').join('');
  };

  // A line cut short by a killed agent must not swallow the next appended line.
  let repairTail = false;

  return {
    file,
    async load() {
      let text: string;
      try {
        text = await readOwnFile(file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { messages: [], skippedLines: 0 };
        if (!(error instanceof ForeignFileError)) throw error;
        await fs.rename(file, `${file}.foreign-${options.now().getTime()}`);
        return { messages: [], skippedLines: 0, setAside: error.message };
      }
      repairTail = text.length > 0 && !text.endsWith('\n');
      const messages: ConversationMessage[] = [];
      let skippedLines = 0;
      for (const line of text.split('\n')) {
        if (line.trim() === '') continue;
        let parsed: unknown;
        try {
          parsed = JSON.parse(line);
        } catch {
          skippedLines++;
          continue;
        }
        const checked = historyLineSchema.safeParse(parsed);
        if (checked.success) messages.push(checked.data.message);
        else skippedLines++;
      }
      return { messages: sanitizeConversation(messages), skippedLines };
    },
    async append(messages) {
      if (messages.length === 0) return;
      await fs.mkdir(options.sessionDir, { recursive: true });
      await fs.appendFile(file, (repairTail ? '\n' : '') + encode(messages), {
        encoding: 'utf8',
        mode: PRIVATE_FILE,
      });
      repairTail = false;
    },
    async replace(messages) {
      await fs.mkdir(options.sessionDir, { recursive: true });
      const temporary = `${file}.${process.pid}.tmp`;
      await fs.writeFile(temporary, encode(messages), { encoding: 'utf8', mode: PRIVATE_FILE });
      await fs.rename(temporary, file);
      repairTail = false;
    },
  };
}

class ForeignFileError extends Error {}

/**
 * The file's text when it is a regular file of this uid, opened without following a link; one written by
 * an older image (0664) is narrowed to 0600 first. Anything else is a ForeignFileError.
 */
async function readOwnFile(file: string): Promise<string> {
  const handle = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP')
      throw new ForeignFileError(`${file} is a symbolic link`);
    throw error;
  });
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) throw new ForeignFileError(`${file} is not a regular file`);
    if (stat.uid !== process.getuid?.()) throw new ForeignFileError(`${file} belongs to uid ${stat.uid}`);
    if (stat.nlink !== 1) throw new ForeignFileError(`${file} has other names (hard links)`);
    if ((stat.mode & 0o077) !== 0) await handle.chmod(PRIVATE_FILE);
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}
