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
  chatId: { pattern: /^[a-z0-9][a-z0-9_-]{0,63}$/, example: 'family' },
  setupHint: 'The local console is always there.',
  create() {
    throw new Error('the local console is created by the host itself, with its socket');
  },
};
