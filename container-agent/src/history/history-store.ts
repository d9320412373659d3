/**
 * The group's conversation on disk: `<session>/history.jsonl`, one message per line, appended as the
 * run goes (so a killed agent loses at most the message it was writing) and rewritten atomically when
 * compacted. The file is inside a container-writable mount, so every line is validated on load.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import * as z from 'zod';
import { conversationMessageSchema, sanitizeConversation, type ConversationMessage } from './conversation.ts';

const HISTORY_VERSION = 1;
const historyLineSchema = z
  .object({ v: z.literal(HISTORY_VERSION), at: z.string(), message: conversationMessageSchema })
  .strict();

export interface HistoryStore {
  readonly file: string;
  /** The stored conversation, with unreadable lines skipped and tool calls paired up. */
  load(): Promise<{ messages: ConversationMessage[]; skippedLines: number }>;
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
        text = await fs.readFile(file, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { messages: [], skippedLines: 0 };
        throw error;
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
      await fs.appendFile(file, (repairTail ? '\n' : '') + encode(messages), 'utf8');
      repairTail = false;
    },
    async replace(messages) {
      await fs.mkdir(options.sessionDir, { recursive: true });
      const temporary = `${file}.${process.pid}.tmp`;
      await fs.writeFile(temporary, encode(messages), 'utf8');
      await fs.rename(temporary, file);
      repairTail = false;
    },
  };
}
