import fs from 'node:fs';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { whatsappConfigSchema } from '../../channels/whatsapp/whatsapp-config.ts';
import { linkWhatsApp, unlinkWhatsApp } from '../../channels/whatsapp/whatsapp-login.ts';
import { acquireHostLock } from '../../store/host-lock.ts';
import { ACCOUNT_NAME, DEFAULT_ACCOUNT, accountLabel } from '../../channels/channel-accounts.ts';
import { accountDataDir } from '../../config/paths.ts';
import { UsageError, type CliContext } from '../cli-context.ts';
import { whatsappUsage } from '../command-usage.ts';
import { errorMessage } from '../../errors/error-message.ts';

/** How often a login that waits says it is still waiting, so a silent terminal never looks hung. */
const PROGRESS_EVERY_MS = 15_000;

/**
 * `carapace whatsapp login|logout`: links or unlinks this machine as a device of the owner's account. Bad
 * input is exit 2 before anything is touched; a login that fails or runs out of time is one line, exit 1.
 */
export async function whatsappCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      phone: { type: 'string' },
      timeout: { type: 'string', default: '180' },
      account: { type: 'string', default: DEFAULT_ACCOUNT },
    },
  });
  const [action] = positionals;
  if (action !== 'login' && action !== 'logout') throw new UsageError(`usage: ${whatsappUsage}`);
  if (values.phone !== undefined && !/^\d{7,15}$/.test(values.phone))
    throw new UsageError(
      `--phone takes digits with the country code and nothing else, e.g. 4915123456789 (got "${values.phone}")`,
    );
  const timeoutS = Number(values.timeout);
  if (!Number.isInteger(timeoutS) || timeoutS < 1 || timeoutS > 3600)
    throw new UsageError('--timeout takes whole seconds, 1 to 3600');
  if (!ACCOUNT_NAME.test(values.account))
    throw new UsageError(
      `--account takes the name of a [channels.whatsapp.<name>] table (got "${values.account}")`,
    );
  const label = accountLabel({ channel: 'whatsapp', name: values.account });
  const channels = (ctx.config() as { channels?: Record<string, unknown> }).channels ?? {};
  if (values.account !== DEFAULT_ACCOUNT && channels[label] === undefined)
    throw new UsageError(
      `there is no WhatsApp account "${values.account}": add a [channels.whatsapp.${values.account}] table to config.toml first`,
    );
  const config = whatsappConfigSchema.parse(channels[label] ?? {});
  fs.mkdirSync(ctx.paths.dataDir, { recursive: true, mode: 0o700 });
  // The running host holds these credentials open: two processes writing them would corrupt them.
  const lock = acquireHostLock(ctx.paths.dataDir);
  // Each account's login in its own folder; the default account's where it always was.
  const authDir = accountDataDir(ctx.paths, 'whatsapp', values.account);
  const logger = pino({ level: 'silent' });
  const started = Date.now();
  const progress = setInterval(
    () =>
      ctx.out(
        `…still waiting (${Math.round((Date.now() - started) / 1000)} s of at most ${timeoutS} s; Ctrl+C stops)`,
      ),
    PROGRESS_EVERY_MS,
  );
  try {
    if (action === 'logout') {
      const { unlinkedRemotely } = await unlinkWhatsApp({
        authDir,
        url: config.websocket_url,
        logger,
        say: ctx.out,
        timeoutMs: Math.min(timeoutS, 20) * 1000,
      });
      ctx.out(
        unlinkedRemotely
          ? 'WhatsApp: this device is unlinked and its login forgotten.'
          : 'WhatsApp: the login is forgotten here. If the phone still lists this device under Linked devices, remove it there.',
      );
      return 0;
    }
    ctx.out(
      `${values.phone ? 'Connecting to WhatsApp to ask for a pairing code' : 'Connecting to WhatsApp'} (gives up after ${timeoutS} s, --timeout)…`,
    );
    const { linkedAs, already } = await linkWhatsApp({
      authDir,
      url: config.websocket_url,
      logger,
      say: ctx.out,
      timeoutMs: timeoutS * 1000,
      ...(values.phone !== undefined ? { phone: values.phone } : {}),
    });
    const number = `+${linkedAs.split('@')[0] ?? linkedAs}`;
    ctx.out(
      already
        ? `WhatsApp: already linked as ${number}. To link another phone, run carapace whatsapp logout first.`
        : `WhatsApp: linked as ${number}. Start the host (carapace start); "Message yourself" is your admin chat.`,
    );
    return 0;
  } catch (err) {
    // WhatsApp's own failures (no phone in time, refused, unreachable) are the owner's to read, not a bug.
    ctx.err(`WhatsApp ${action} failed: ${errorMessage(err)}`);
    return 1;
  } finally {
    clearInterval(progress);
    lock.release();
  }
}
