import type { InboundMessage } from '../channels/channel.ts';
import { fenceStrangerText } from '../services/untrusted-fence.ts';

/**
 * Who sent a message is not who wrote it. Words the sender forwarded or quoted are their author's: the
 * owner forwarding a stranger's message into the admin chat hands the agent a stranger's words. This is
 * the one place that turns the adapter's `origin` and `quoted` into what the host does with them.
 */

/** A fenced part stays well inside one chat message of the agent protocol (64 KiB). */
const MAX_FENCED_CHARS = 24 * 1024;

/**
 * An author's name as the platform gives it goes into the fence's first line: anyone can pick a display
 * name, so it is one short line without the characters a fence marker is made of.
 */
const safeName = (name: string) =>
  name
    .replace(/[\s<>]+/g, ' ')
    .trim()
    .slice(0, 64) || 'someone';

/** True when the message carries words neither its sender nor the owner wrote (they corrupt a run). */
export function carriesStrangerWords(m: Pick<InboundMessage, 'origin' | 'quoted'>): boolean {
  const forwarded = m.origin.kind === 'forwarded' && !m.origin.authorIsOwner;
  return forwarded || (m.quoted !== undefined && !m.quoted.authorIsOwner);
}

/**
 * The text as stored and as the agent reads it: a stranger's forwarded or quoted words fenced as
 * untrusted, with who forwarded them and who wrote them; the owner's own forwarded or quoted words
 * labelled as such.
 */
export function textAsRead(m: Pick<InboundMessage, 'origin' | 'quoted' | 'text' | 'senderName'>): string {
  const sender = safeName(m.senderName);
  let text = m.text;
  if (m.origin.kind === 'forwarded') {
    text = m.origin.authorIsOwner
      ? `[forwarded by ${sender}: the owner's own earlier words]\n${m.text}`
      : fenceStrangerText(
          `a message ${sender} forwarded, written by ${safeName(m.origin.author)}`,
          m.text,
          MAX_FENCED_CHARS,
        );
  }
  if (m.quoted) {
    const quote = m.quoted.authorIsOwner
      ? `[quoting the owner's own words]\n${m.quoted.text}`
      : fenceStrangerText(
          `words ${sender} quoted, written by ${safeName(m.quoted.author)}`,
          m.quoted.text,
          MAX_FENCED_CHARS,
        );
    text = `${text}\n${quote}`;
  }
  return text;
}
