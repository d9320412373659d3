import fs from 'node:fs';
import pino from 'pino';
import { hostStatus } from '../../channels/local/local-api.ts';
import { createLocalClient, HostUnreachable } from '../../channels/local/local-client.ts';
import { cliChannelRegistry } from './channel-registry.ts';
import { channelDataDir } from '../../config/paths.ts';
import { loadSecrets } from '../../config/secrets.ts';
import { openStore } from '../../store/store.ts';
import type { Check } from './doctor-check.ts';

/** Each configured channel's state as the running host reports it (logged out, stopped: with the fix). */
export const checkChannels: Check = async (ctx) => {
  const registry = cliChannelRegistry(ctx);
  const names = registry.names().filter((n) => registry.isConfigured(n));
  let live;
  try {
    live = hostStatus.parse(await createLocalClient(ctx.paths.socketFile).getJson('/v1/status'));
  } catch (err) {
    if (!(err instanceof HostUnreachable)) throw err;
  }
  if (!live)
    return { name: 'channels', ok: true, detail: `configured: ${names.join(', ')} (host not running)` };
  const down = live.channels.filter((c) => c.state !== 'connected');
  return {
    name: 'channels',
    ok: down.length === 0,
    detail: live.channels.map((c) => `${c.name} ${c.state}${c.reason ? ` (${c.reason})` : ''}`).join('; '),
    ...(down.length ? { fix: 'follow the reason given for each channel that is not connected' } : {}),
  };
};

/** Replies that could not be delivered for good, and groups left on a channel that is not configured. */
export const checkDeliveries: Check = async (ctx) => {
  if (!fs.existsSync(ctx.paths.databaseFile))
    return { name: 'deliveries', ok: true, detail: 'no database yet' };
  const registry = cliChannelRegistry(ctx);
  const store = openStore({ file: ctx.paths.databaseFile });
  try {
    const dead = store.outbox.deadLetters(5);
    const stranded = store.groups.list().filter((g) => !registry.isConfigured(g.channel));
    const problems = [
      ...(dead.length
        ? [
            `${store.outbox.deadCount()} dead-lettered repl${store.outbox.deadCount() === 1 ? 'y' : 'ies'}, newest: ` +
              dead.map((d) => `${d.channel}:${d.chatId} (${d.lastError ?? 'no reason'})`).join('; '),
          ]
        : []),
      ...stranded.map((g) => `group ${g.id} is on channel ${g.channel}, which is not configured`),
    ];
    return {
      name: 'deliveries',
      ok: problems.length === 0,
      detail: problems.length ? problems.join('; ') : 'nothing dead-lettered',
      ...(problems.length
        ? {
            fix: 'remove groups whose chat is gone (carapace groups remove <id>) or configure their channel ([channels.<name>] in config.toml)',
          }
        : {}),
    };
  } finally {
    store.close();
  }
};

/** Each configured channel's own checks (Telegram: token, privacy mode, webhook), each with its fix. */
export const checkChannelSetups: Check = async (ctx) => {
  const config = ctx.config();
  const secrets = loadSecrets({ envFile: ctx.paths.envFile, env: ctx.io.env });
  const lines: { ok: boolean; line: string }[] = [];
  // One run of the channel's checks per account, each line prefixed with the account when it is a named one.
  for (const { label, definition: d } of cliChannelRegistry(ctx).configured()) {
    const section = (config.channels as Record<string, unknown>)[label];
    if (section === undefined || !d.doctor) continue;
    const prefix = label === d.name ? '' : `${label}: `;
    const checked = await d.doctor({
      config: section,
      secret: (name) => secrets.get(name),
      // Read-only checks: nothing is remembered.
      state: { get: () => undefined, set: () => undefined },
      dataDir: channelDataDir(ctx.paths, label),
      logger: pino({ level: 'silent' }),
      assistantName: config.assistant.name,
    });
    lines.push(...checked.map((l) => ({ ...l, line: prefix + l.line })));
  }
  const failed = lines.filter((l) => !l.ok);
  return {
    name: 'channel setup',
    ok: failed.length === 0,
    detail: lines.length ? lines.map((l) => l.line).join('; ') : 'no channel with checks is configured',
    ...(failed.length ? { fix: 'as each failing line says' } : {}),
  };
};
