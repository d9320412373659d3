import type { UserFromGetMe } from 'grammy/types';

/**
 * With privacy mode on (the default) a bot in a group only sees commands, replies to it and messages that
 * @-mention it. The host's trigger word then reaches it only when it is the bot's own @username: anything
 * else is silently never delivered. Returns the owner's warning with the exact fix, or undefined.
 */
export function privacyWarning(
  me: Pick<UserFromGetMe, 'username' | 'can_read_all_group_messages'>,
  triggerWord: string,
): string | undefined {
  if (me.can_read_all_group_messages) return undefined;
  const handle = `@${me.username}`;
  if (triggerWord.toLowerCase() === handle.toLowerCase()) return undefined;
  return (
    `Telegram privacy mode is on for ${handle}: in groups it sees only messages that mention ${handle}, ` +
    `replies to it and /commands, so "${triggerWord}" alone never reaches it. Fix: in Telegram open ` +
    `@BotFather, send /setprivacy, choose ${handle}, press Disable; then remove the bot from each group and ` +
    `add it again (Telegram applies the change only on re-adding).`
  );
}
