export interface TriggerInput {
  text: string;
  mentionsBot: boolean;
  repliesToBot: boolean;
}

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
 * the assistant, so everything there triggers; elsewhere only an explicit address does.
 */
export function shouldTrigger(group: { isAdmin: boolean }, m: TriggerInput, pattern: RegExp): boolean {
  if (group.isAdmin) return true;
  if (m.mentionsBot || m.repliesToBot) return true;
  return pattern.test(m.text);
}
