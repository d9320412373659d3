import { Api } from 'grammy';
import type { TelegramConfig } from './telegram-config.ts';
import { privacyWarning } from './telegram-privacy.ts';
import { errorMessage } from '../../errors/error-message.ts';

export interface DoctorLine {
  ok: boolean;
  line: string;
}

/**
 * `carapace doctor` for Telegram: the token (getMe), privacy mode against the trigger word, and the webhook
 * state against the configured mode. Each failing line says how to fix it. Read-only: nothing is changed.
 */
export async function telegramDoctor(opts: {
  config: TelegramConfig;
  token: string | undefined;
  webhookSecret?: string | undefined;
  triggerWord: string;
}): Promise<DoctorLine[]> {
  const { config, token } = opts;
  if (!token) {
    return [
      {
        ok: false,
        line: `telegram token: ${config.bot_token_env} is not set; put the token from @BotFather in <config dir>/.env as ${config.bot_token_env}=…`,
      },
    ];
  }
  const api = new Api(token, { apiRoot: config.api_root });
  const lines: DoctorLine[] = [];
  let me;
  try {
    me = await api.getMe();
    lines.push({ ok: true, line: `telegram token: valid for @${me.username}` });
  } catch (err) {
    return [
      {
        ok: false,
        line: `telegram token: getMe failed (${errorMessage(err)}); check ${config.bot_token_env}, or send /token to @BotFather for a new one`,
      },
    ];
  }
  const privacy = privacyWarning(me, opts.triggerWord);
  lines.push(
    privacy
      ? { ok: false, line: `telegram privacy mode: ${privacy}` }
      : {
          ok: true,
          line: me.can_read_all_group_messages
            ? 'telegram privacy mode: off (the bot sees every group message)'
            : `telegram privacy mode: on, and the trigger word is the bot's @${me.username}, which it still sees`,
        },
  );
  try {
    const info = await api.getWebhookInfo();
    if (config.mode === 'polling') {
      lines.push(
        info.url
          ? {
              ok: true,
              line: `telegram webhook: set to ${info.url}; carapace start deletes it, since mode = "polling"`,
            }
          : { ok: true, line: 'telegram webhook: none (mode = "polling")' },
      );
    } else {
      const want = config.webhook?.public_url;
      const secretOk = !!opts.webhookSecret;
      const problems = [
        ...(info.url && info.url !== want
          ? [`set to ${info.url}, not ${want}; carapace start sets it again`]
          : []),
        ...(info.last_error_message
          ? [
              `Telegram's last delivery failed: ${info.last_error_message}; check your reverse proxy forwards ${want} to ${config.webhook?.listen}`,
            ]
          : []),
        ...(secretOk
          ? []
          : [`${config.webhook?.secret_token_env} is not set; put a random 32+ character secret there`]),
      ];
      lines.push(
        problems.length > 0
          ? { ok: false, line: `telegram webhook: ${problems.join('; ')}` }
          : {
              ok: true,
              line: `telegram webhook: ${info.url || `${want} (set at start)`}, ${info.pending_update_count} pending`,
            },
      );
    }
  } catch (err) {
    lines.push({ ok: false, line: `telegram webhook: getWebhookInfo failed (${errorMessage(err)})` });
  }
  return lines;
}
