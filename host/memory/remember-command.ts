import type { AdminCommandHandlerDeps } from '../admin/admin-command-handler.ts';
import type { MemoryNotes } from './memory-notes.ts';

/** The longest note the owner can dictate in one message; longer text belongs in a file in the group folder. */
export const MAX_REMEMBERED_CHARS = 4000;

// "remember that …" or the Telegram habit "/remember …" (with its optional @bot suffix), the whole message.
// Bare "remember …" is left to conversation: "remember the milk" said to friends is not a note.
const REMEMBER = /^(?:\/remember(?:@[\w.]+)?\s+|remember\s+that\s+)([\s\S]+)$/i;

export interface RememberCommandContext {
  /** The assistant's name: in a group the owner addresses it first ("@Andy remember that …"). */
  assistantName: string;
  /** The admin chat is a private conversation with the assistant: no address needed there. */
  isAdmin: boolean;
}

/**
 * The note's text when the message is the owner's "remember that …", else undefined. In a group the
 * message must start with the assistant's mention, as a trigger would: the owner talking to friends about
 * what to remember is conversation, not an instruction to the host.
 */
export function parseRememberCommand(text: string, ctx: RememberCommandContext): string | undefined {
  let rest = text.trim();
  const mention = `@${ctx.assistantName.toLowerCase()}`;
  if (rest.toLowerCase().startsWith(mention)) rest = rest.slice(mention.length).replace(/^[\s,:]+/, '');
  else if (!ctx.isAdmin) return undefined;
  const m = REMEMBER.exec(rest);
  const note = m?.[1]?.trim();
  return note ? note : undefined;
}

export interface RememberCommandDeps {
  notes: Pick<MemoryNotes, 'write'>;
  /** Read at each message: a config reload may rename the assistant. */
  assistantName(): string;
}

/**
 * The owner's "remember that …" for the admin command handler, which checks that the owner sent it.
 * The owner's own words carry no taint: a later recall of the note is the owner speaking, unlike a note
 * an agent wrote from what it read.
 */
export function createRememberCommand({
  notes,
  assistantName,
}: RememberCommandDeps): NonNullable<AdminCommandHandlerDeps['remember']> {
  return {
    parse: (text, group) =>
      parseRememberCommand(text, { assistantName: assistantName(), isAdmin: group.isAdmin }),
    write: async (groupId, text) => {
      if (text.length > MAX_REMEMBERED_CHARS)
        return (
          `Not remembered: the note has ${text.length} characters, over ${MAX_REMEMBERED_CHARS}. ` +
          'Put long text in a file in the group folder, or split it into shorter notes.'
        );
      const note = await notes.write({
        groupId,
        text,
        author: 'owner',
        taint: { corruption: false, secret: false },
      });
      return `Remembered (note ${note.id}, ${note.path}). "carapace memory forget ${groupId} note:${note.id}" removes it.`;
    },
  };
}
