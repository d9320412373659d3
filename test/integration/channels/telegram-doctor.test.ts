/**
 * `carapace doctor` for Telegram, against the fake Bot API (a real HTTP server): the token, privacy mode
 * against the trigger word, and the webhook state against the configured mode, each failure with its fix.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { telegramConfigSchema } from '../../../host/channels/telegram/telegram-config.ts';
import { telegramDoctor } from '../../../host/channels/telegram/telegram-doctor.ts';
import { startFakeTelegram, type FakeTelegram } from '../../fakes/fake-telegram-api.ts';

const fakes: FakeTelegram[] = [];
afterEach(async () => {
  for (const f of fakes.splice(0)) await f.close();
});

async function fake(opts: Parameters<typeof startFakeTelegram>[0] = {}): Promise<FakeTelegram> {
  const f = await startFakeTelegram(opts);
  fakes.push(f);
  return f;
}

const configFor = (tg: FakeTelegram, extra: Record<string, unknown> = {}) =>
  telegramConfigSchema.parse({ api_root: tg.apiRoot, owner_user_id: 1, ...extra });

describe('telegram doctor', () => {
  it('says how to set a missing token, without calling Telegram', async () => {
    const tg = await fake();
    const lines = await telegramDoctor({ config: configFor(tg), token: undefined, triggerWord: '@Andy' });
    expect(lines).toEqual([{ ok: false, line: expect.stringContaining('TELEGRAM_BOT_TOKEN is not set') }]);
    expect(tg.calls).toEqual([]);
  });

  it('a token Telegram refuses fails with the way to get a new one', async () => {
    const tg = await fake();
    const [line, ...rest] = await telegramDoctor({
      config: configFor(tg),
      token: '999:not-the-token',
      triggerWord: '@Andy',
    });
    expect(line).toMatchObject({
      ok: false,
      line: expect.stringMatching(/getMe failed.*\/token to @BotFather/),
    });
    expect(rest).toEqual([]);
  });

  it('privacy mode on with a plain trigger word fails with the BotFather fix; off passes', async () => {
    const tg = await fake({ privacy: true });
    const on = await telegramDoctor({ config: configFor(tg), token: tg.token, triggerWord: '@Andy' });
    expect(on[0]).toMatchObject({ ok: true, line: expect.stringContaining('valid for @carapace_test_bot') });
    expect(on[1]).toMatchObject({ ok: false, line: expect.stringMatching(/privacy mode: .*\/setprivacy/) });

    tg.setPrivacy(false);
    const off = await telegramDoctor({ config: configFor(tg), token: tg.token, triggerWord: '@Andy' });
    expect(off[1]).toEqual({
      ok: true,
      line: expect.stringContaining('off (the bot sees every group message)'),
    });
  });

  it('polling with no webhook passes; webhook mode without its secret fails and names the variable', async () => {
    const tg = await fake();
    const polling = await telegramDoctor({ config: configFor(tg), token: tg.token, triggerWord: '@Andy' });
    expect(polling[2]).toEqual({ ok: true, line: 'telegram webhook: none (mode = "polling")' });

    const webhook = configFor(tg, {
      mode: 'webhook',
      webhook: {
        listen: '127.0.0.1:8443',
        public_url: 'https://bot.example.org/tg',
        secret_token_env: 'TG_SECRET',
      },
    });
    const noSecret = await telegramDoctor({ config: webhook, token: tg.token, triggerWord: '@Andy' });
    expect(noSecret[2]).toMatchObject({ ok: false, line: expect.stringContaining('TG_SECRET is not set') });
  });
});
