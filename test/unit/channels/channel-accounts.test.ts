import { describe, expect, it } from 'vitest';
import {
  accountLabel,
  channelAccountsSchema,
  listChannelAccounts,
} from '../../../host/channels/channel-accounts.ts';
import { accountDataDir } from '../../../host/config/paths.ts';
import { z } from 'zod';
import { problemsFromZod } from '../../../host/config/zod-problems.ts';
import { formatProblem } from '../../../host/config/config-error.ts';
import { telegramConfigSchema } from '../../../host/channels/telegram/telegram-config.ts';
import { whatsappConfigSchema } from '../../../host/channels/whatsapp/whatsapp-config.ts';

const telegram = channelAccountsSchema(
  'telegram',
  telegramConfigSchema,
  Object.keys(telegramConfigSchema.shape),
);
const whatsapp = channelAccountsSchema(
  'whatsapp',
  whatsappConfigSchema,
  Object.keys(whatsappConfigSchema.shape),
);

/** The lines `carapace` prints for a bad `[channels.telegram]`, placed where it sits in config.toml. */
function problems(section: unknown): string[] {
  const parsed = z
    .object({ channels: z.object({ telegram }) })
    .safeParse({ channels: { telegram: section } });
  if (parsed.success) throw new Error('expected the section to be refused');
  return problemsFromZod('config.toml', parsed.error, () => undefined).map(formatProblem);
}

describe('channel accounts in config', () => {
  it("reads today's single table as the default account, a webhook sub-table staying a setting", () => {
    const parsed = telegram.parse({
      owner_user_id: 42,
      mode: 'webhook',
      webhook: { listen: '127.0.0.1:8443', public_url: 'https://bot.example.com/tg' },
    });
    expect(Object.keys(parsed)).toEqual(['default']);
    expect(parsed.default?.owner_user_id).toBe(42);
    expect(parsed.default?.webhook?.listen).toBe('127.0.0.1:8443');
    expect(telegram.parse({}).default?.bot_token_env).toBe('TELEGRAM_BOT_TOKEN');
  });

  it('reads one table per named account, each with its own defaults', () => {
    const parsed = telegram.parse({
      family: { bot_token_env: 'FAMILY_BOT_TOKEN', owner_user_id: 42 },
      work: { bot_token_env: 'WORK_BOT_TOKEN', ack_reaction: false },
    });
    expect(parsed.family?.bot_token_env).toBe('FAMILY_BOT_TOKEN');
    expect(parsed.work?.ack_reaction).toBe(false);
    expect(parsed.work?.mode).toBe('polling');
    expect(whatsapp.parse({ home: {}, shop: { chunk_size: 1000 } }).shop?.chunk_size).toBe(1000);
  });

  it('refuses settings mixed with account tables, saying both ways to fix it', () => {
    expect(problems({ owner_user_id: 42, work: { bot_token_env: 'WORK_BOT_TOKEN' } })).toEqual([
      "config.toml: channels.telegram: mixes one account's settings (owner_user_id) with account tables (work). " +
        'Either keep one account and write its settings directly under [channels.telegram], or move every ' +
        "setting into its account's table, e.g. [channels.telegram.work]",
    ]);
  });

  it('refuses an account name that is not lowercase letters, digits and "-", suggesting one that is', () => {
    const [line] = problems({ 'Work Bot': {} });
    expect(line).toContain('channels.telegram.Work Bot');
    expect(line).toContain('[channels.telegram.work-bot]');
    expect(problems({ _x: {} })[0]).toContain('[channels.telegram.x]');
  });

  it("names the account in a bad setting's key", () => {
    const lines = problems({ work: { owner_user_id: -1 }, family: {} });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^config\.toml: channels\.telegram\.work\.owner_user_id: .*numeric Telegram user id/,
    );
    const webhookless = problems({ work: { mode: 'webhook' } });
    expect(webhookless[0]).toContain('channels.telegram.work.webhook');
  });

  it('still refuses an unknown key of a single table', () => {
    expect(problems({ bot_token: 'x' })[0]).toContain('bot_token');
  });

  it('lists every account as {channel, name, settings} in channel order, names sorted', () => {
    const channels = {
      whatsapp: whatsapp.parse({}),
      telegram: telegram.parse({ work: {}, family: {} }),
      local: undefined,
    };
    const listed = listChannelAccounts(channels, ['local', 'telegram', 'whatsapp']);
    expect(listed.map(accountLabel)).toEqual(['telegram.family', 'telegram.work', 'whatsapp']);
    expect(listed[2]).toMatchObject({ channel: 'whatsapp', name: 'default', settings: { enabled: true } });
  });

  it("keeps the default account's data folder and gives a named account a sibling of it", () => {
    const paths = { dataDir: '/srv/carapace/data' };
    expect(accountDataDir(paths, 'whatsapp', 'default')).toBe('/srv/carapace/data/channels/whatsapp');
    expect(accountDataDir(paths, 'whatsapp', 'shop')).toBe('/srv/carapace/data/channels/whatsapp.shop');
    expect(() => accountDataDir(paths, 'whatsapp', '../x')).toThrow(/not an account name/);
  });
});
