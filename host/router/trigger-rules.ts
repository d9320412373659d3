export interface TriggerInput {
  text: string;
  senderId: string;
  mentionsBot: boolean;
  repliesToBot: boolean;
  fromOwner?: boolean;
  senderIsOwner?: boolean;
}

/** A group's `[groups.<id>]` trigger settings. */
export interface TriggerSettings {
  /** "mention": an explicit address; "always": every message; "owner": the owner's explicit address only. */
  trigger: 'mention' | 'always' | 'owner';
  /** When set, only these senders can trigger at all. */
  allowedSenders?: readonly string[];
}

export const DEFAULT_TRIGGER: TriggerSettings = { trigger: 'mention' };

/**
 * `@Name` as its own word, case-insensitive; "mail@andy.com", "@Andyman" and "@Andy-bot" (another name:
 * names may contain "-") do not count.
 */
export function triggerPattern(assistantName: string): RegExp {
  // Only syntax characters are escaped: with the `u` flag an escaped "-" outside a class is a SyntaxError,
  // and the name schema allows "-".
  const escaped = assistantName.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  return new RegExp(`(^|[^\\p{L}\\p{N}_@.])@${escaped}(?![\\p{L}\\p{N}_]|-[\\p{L}\\p{N}])`, 'iu');
}

/**
 * Whether a stored message should start (or join) a run. The admin chat is a private conversation with
 * the assistant, so everything there triggers; elsewhere the group's settings decide, and a message that
 * does not trigger stays context for the next run.
 */
export function shouldTrigger(
  group: { isAdmin: boolean },
  m: TriggerInput,
  pattern: RegExp,
  settings: TriggerSettings = DEFAULT_TRIGGER,
): boolean {
  if (group.isAdmin) return true;
  if (settings.allowedSenders && !settings.allowedSenders.includes(m.senderId)) return false;
  if (settings.trigger === 'always') return true;
  if (settings.trigger === 'owner' && !(m.senderIsOwner === true || m.fromOwner === true)) return false;
  if (m.mentionsBot || m.repliesToBot) return true;
  return pattern.test(m.text);
}
