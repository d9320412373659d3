import { parseArgs } from 'node:util';
import { createLocalClient, HostUnreachable } from '../../channels/local/local-client.ts';
import { cliChannelRegistry } from './channel-registry.ts';
import { ensureAdminGroup } from '../../admin/admin-group.ts';
import { registerGroup, RegistrationRefused } from '../../admin/register-group.ts';
import { ensureDataDirs } from '../../config/paths.ts';
import { openStore } from '../../store/store.ts';
import { UsageError, type CliContext } from '../cli-context.ts';
import { groupsUsage } from '../command-usage.ts';
import { untaintGroup } from './groups-untaint.ts';
import { errorMessage } from '../../errors/error-message.ts';

/**
 * A running host holds the group's pre-started container, which no run may take any more: it stops it at once
 * when told. No host running, nothing to tell; a host that cannot be told stops the container after idle_ms.
 */
async function tellRunningHost(ctx: CliContext): Promise<void> {
  try {
    await createLocalClient({ socketFile: ctx.paths.socketFile, pidFile: ctx.paths.pidFile }).groupsChanged();
  } catch (err) {
    if (err instanceof HostUnreachable) return;
    ctx.err(
      `the running host was not told (${errorMessage(err)}); its container pre-started for the group stops on its own within [runs.prestart] idle_ms`,
    );
  }
}

/**
 * Chat ids of Telegram groups start with "-" (-1001234567890), which parseArgs would take for an option:
 * the value after --chat is always the chat id.
 */
function joinChatValue(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i += 1) {
    const next = args[i + 1];
    if (args[i] === '--chat' && next !== undefined) {
      out.push(`--chat=${next}`);
      i += 1;
    } else out.push(args[i] as string);
  }
  return out;
}

export async function groupsCommand(ctx: CliContext, args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: joinChatValue(rest),
    allowPositionals: true,
    options: {
      channel: { type: 'string' },
      chat: { type: 'string' },
      name: { type: 'string' },
      network: { type: 'string' },
      json: { type: 'boolean', default: false },
      keep: { type: 'string', multiple: true },
      cancel: { type: 'string', multiple: true },
    },
  });
  ensureDataDirs(ctx.paths);
  const store = openStore({ file: ctx.paths.databaseFile });
  try {
    ensureAdminGroup(store);
    switch (sub) {
      case 'add': {
        const id = positionals[0];
        if (!id)
          throw new UsageError(
            'groups add needs a group id, e.g. carapace groups add family --channel local',
          );
        const registry = cliChannelRegistry(ctx);
        if (!values.channel) {
          throw new UsageError(
            `--channel is needed: one of ${registry.names().join(', ')}, e.g. --channel local`,
          );
        }
        try {
          const g = registerGroup(
            { store, registry },
            {
              id,
              channel: values.channel,
              ...(values.chat === undefined ? {} : { chatId: values.chat }),
              ...(values.name === undefined ? {} : { name: values.name }),
              ...(values.network === undefined ? {} : { network: values.network }),
            },
          );
          ctx.out(`added group ${g.id} (${g.channel}:${g.chatId}, network ${g.networkMode})`);
        } catch (err) {
          if (err instanceof RegistrationRefused) throw new UsageError(err.message);
          throw err;
        }
        return 0;
      }
      case 'list': {
        const groups = store.groups.list();
        if (values.json) ctx.out(JSON.stringify(groups));
        else
          for (const g of groups) {
            ctx.out(
              `${g.id}\t${g.channel}:${g.chatId}\t${g.isAdmin ? 'admin' : 'member'}\tnetwork=${g.networkMode}\t${g.name}`,
            );
          }
        return 0;
      }
      case 'remove': {
        const id = positionals[0];
        if (!id) throw new UsageError('groups remove needs a group id');
        const g = store.groups.get(id);
        if (g?.isAdmin) throw new UsageError(`"${id}" is the admin group; it cannot be removed`);
        // Its replies still waiting go with it: a removed group must not hear from the assistant again.
        const dropped = store.transaction(() => {
          if (!store.groups.remove(id)) return undefined;
          return store.outbox.dropForGroup(id, 'the group was removed before this was delivered');
        });
        if (dropped === undefined)
          throw new UsageError(`there is no group "${id}" (see carapace groups list)`);
        ctx.out(
          `removed group ${id}; its folders under ${ctx.paths.groupsDir} are kept` +
            (dropped > 0 ? `; ${dropped} undelivered repl${dropped === 1 ? 'y' : 'ies'} dropped` : ''),
        );
        await tellRunningHost(ctx);
        return 0;
      }
      case 'untaint': {
        const id = positionals[0];
        if (!id) throw new UsageError('groups untaint needs a group id');
        const g = store.groups.get(id);
        if (!g) throw new UsageError(`there is no group "${id}" (see carapace groups list)`);
        if (!g.taint.corruption && !g.taint.secret && store.tasks.taintedOf(id).length === 0) {
          ctx.out(`${id} has no standing taint; nothing to clear`);
          return 0;
        }
        for (const line of untaintGroup(store, id, { keep: values.keep ?? [], cancel: values.cancel ?? [] }))
          ctx.out(line);
        ctx.out(
          `cleared the standing taint of ${id}; its next run starts clean` +
            (g.isAdmin ? '' : ' (its messages still come from other people, so it stays corrupted)'),
        );
        return 0;
      }
      default:
        throw new UsageError(`usage:\n${groupsUsage}`);
    }
  } finally {
    store.close();
  }
}
