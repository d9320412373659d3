import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { whatsappConfigSchema } from '../../channels/whatsapp/whatsapp-config.ts';
import { linkWhatsApp, unlinkWhatsApp } from '../../channels/whatsapp/whatsapp-login.ts';
import { acquireHostLock } from '../../store/host-lock.ts';
import { UsageError, type CliContext } from '../cli-context.ts';
import { whatsappUsage } from '../command-usage.ts';

/** `carapace whatsapp login|logout`: links or unlinks this machine as a device of the owner's account. */
export async function whatsappCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { phone: { type: 'string' } },
  });
  const [action] = positionals;
  if (action !== 'login' && action !== 'logout') throw new UsageError(`usage: ${whatsappUsage}`);
  const section = (ctx.config() as { channels?: Record<string, unknown> }).channels?.whatsapp;
  const config = whatsappConfigSchema.parse(section ?? {});
  fs.mkdirSync(ctx.paths.dataDir, { recursive: true, mode: 0o700 });
  // The running host holds these credentials open: two processes writing them would corrupt them.
  const lock = acquireHostLock(ctx.paths.dataDir);
  const authDir = path.join(ctx.paths.dataDir, 'channels', 'whatsapp');
  const logger = pino({ level: 'silent' });
  try {
    if (action === 'logout') {
      const { unlinkedRemotely } = await unlinkWhatsApp({
        authDir,
        url: config.websocket_url,
        logger,
        say: ctx.out,
      });
      ctx.out(
        unlinkedRemotely
          ? 'WhatsApp: this device is unlinked and its login forgotten.'
          : 'WhatsApp: the login is forgotten here. If the phone still lists this device under Linked devices, remove it there.',
      );
      return 0;
    }
    ctx.out(values.phone ? 'Connecting to WhatsApp to ask for a pairing code…' : 'Connecting to WhatsApp…');
    const { linkedAs, already } = await linkWhatsApp({
      authDir,
      url: config.websocket_url,
      logger,
      say: ctx.out,
      ...(values.phone !== undefined ? { phone: values.phone } : {}),
    });
    const number = `+${linkedAs.split('@')[0] ?? linkedAs}`;
    ctx.out(
      already
        ? `WhatsApp: already linked as ${number}. To link another phone, run carapace whatsapp logout first.`
        : `WhatsApp: linked as ${number}. Start the host (carapace start); "Message yourself" is your admin chat.`,
    );
    return 0;
  } finally {
    lock.release();
  }
}
