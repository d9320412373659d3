import { expect } from 'vitest';
import { startFakeTelegram, type FakeTelegram } from '../fakes/fake-telegram-api.ts';
import { startE2eHost, type E2eHost, type E2eHostOptions } from './e2e-harness.ts';

export interface TelegramE2eOptions extends E2eHostOptions {
  /** The owner's Telegram user id. */
  owner: number;
  /** Group id → its Telegram chat, as `groups add --chat` takes it ("-100…", or "-100…/<topic>"). */
  groups: Record<string, string>;
  /** More of `[channels.telegram]` than the owner, the fake's API root and a short poll. */
  telegram?: Record<string, unknown>;
}

/**
 * The fake Bot API and a host on it, set up as the owner would: the groups added with `carapace groups add`,
 * then the owner's private chat linked (from then on an admin chat).
 */
export async function startTelegramE2eHost(
  options: TelegramE2eOptions,
): Promise<{ tg: FakeTelegram; h: E2eHost }> {
  const { owner, groups, telegram, config, secrets, ...rest } = options;
  const tg = await startFakeTelegram();
  let h: E2eHost | undefined;
  try {
    h = await startE2eHost({
      ...rest,
      config: {
        ...config,
        channels: {
          telegram: { owner_user_id: owner, api_root: tg.apiRoot, poll_timeout_s: 2, ...telegram },
        },
      },
      secrets: { ...secrets, TELEGRAM_BOT_TOKEN: tg.token },
    });
    for (const [id, chat] of Object.entries(groups)) {
      const res = await h.cli(['groups', 'add', id, '--channel', 'telegram', '--chat', chat]);
      expect(res.code, res.stderr).toBe(0);
    }
    await tg.linkOwner(owner);
  } catch (error) {
    // The caller gets nothing to close: what came up goes down here.
    await h?.stop();
    await tg.close();
    throw error;
  }
  return { tg, h };
}
