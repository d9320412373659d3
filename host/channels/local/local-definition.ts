import { z } from 'zod';
import type { ChannelDefinition } from '../channel.ts';
import { LOCAL_CHANNEL } from './local-names.ts';

export const LOCAL_TEXT_LIMIT = 64_000;

/**
 * The console in the registry: always configured (no `[channels.local]` section), chat id = group id. The
 * host creates the console itself, because it also serves the socket's routes; `create` is never called.
 */
export const localChannelDefinition: ChannelDefinition<Record<string, never>> = {
  name: LOCAL_CHANNEL,
  configSchema: z.object({}).strict(),
  formattingRules:
    'You are talking to the owner in a terminal. Use plain text or light Markdown; keep lines readable.',
  capabilities: {
    members: 'only the owner can open the console, so it has no members',
    forwards: 'the console has no forwarding: what is typed there is the owner’s own words',
    transientSendFailures: 'delivery is the outbox row itself, so nothing can fail in transit',
    chatMoves: 'console chats are group ids, which never move',
    connectionDrops: 'the console is the host itself; there is no connection to lose',
    sharedConnection: 'the console is the host itself; there is no connection to lose',
    retractActions: 'the console shows no buttons: it prints every decision and expiry as a line of its own',
    reactions: 'the console has no reactions: the owner sees the run begin in the console itself',
    typing: 'the console has no typing indicator: it shows the run as it goes',
    unsend: 'the console prints lines; what it printed stays in the scrollback',
    edits: 'the console prints each answer once, whole; nothing there waits long enough to need streaming',
  },
  chatId: { pattern: /^[a-z0-9][a-z0-9_-]{0,63}$/, example: 'family' },
  setupHint: 'The local console is always there.',
  create() {
    throw new Error('the local console is created by the host itself, with its socket');
  },
};
