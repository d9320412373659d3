import { parseArgs } from 'node:util';
import { ensureDataDirs } from '../../config/paths.ts';
import { openStore } from '../../store/store.ts';
import type { CliContext } from '../cli-context.ts';
import { cliChannelRegistry } from './channel-registry.ts';

/**
 * Chats that wrote to the bot or added it and could be registered (not a group yet, not an admin chat, a
 * kind of chat the channel reads): what to register, never content.
 */
export async function chatsCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean', default: false } } });
  ensureDataDirs(ctx.paths);
  const store = openStore({ file: ctx.paths.databaseFile });
  try {
    const registry = cliChannelRegistry(ctx);
    // Only what can be registered: no registered group, no admin chat, no chat kind the channel never reads.
    const chats = store.chatsSeen
      .list()
      .filter(
        (c) =>
          !store.groups.findByChat(c.channel, c.chatId) &&
          registry.chatKind(c.channel, c.chatId).kind === 'group',
      );
    if (values.json) {
      ctx.out(JSON.stringify(chats));
      return 0;
    }
    if (chats.length === 0) {
      ctx.out('No unregistered chats have written to the bot yet.');
      return 0;
    }
    for (const c of chats) ctx.out(`${c.channel}\t${c.chatId}\t${c.lastSeenAt}\t${c.title}`);
    ctx.out('Register one with: carapace groups add <id> --channel <channel> --chat <chat id>');
    return 0;
  } finally {
    store.close();
  }
}
