import { parseArgs } from 'node:util';
import { ensureAdminGroup, ensureDataDirs } from '../../main.ts';
import { GroupExistsError, type NewGroup } from '../../store/groups-store.ts';
import { openStore, type Store } from '../../store/store.ts';
import { UsageError, type CliContext } from '../cli-context.ts';
import { groupsUsage } from '../command-usage.ts';
import { untaintGroup } from './groups-untaint.ts';

const CHANNELS = ['local', 'telegram', 'whatsapp'] as const;

/** A duplicate or malformed id is the user's input to fix, not a crash: report it as bad usage. */
function addGroupOrExplain(store: Store, g: NewGroup) {
  try {
    return store.groups.add(g);
  } catch (err) {
    if (err instanceof GroupExistsError || /is not valid/.test((err as Error).message)) {
      throw new UsageError((err as Error).message);
    }
    throw err;
  }
}

export async function groupsCommand(ctx: CliContext, args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
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
        const channel = values.channel;
        if (!channel || !(CHANNELS as readonly string[]).includes(channel)) {
          throw new UsageError(`--channel must be one of ${CHANNELS.join(', ')}, e.g. --channel local`);
        }
        if (channel !== 'local' && !values.chat) {
          throw new UsageError(
            `--chat is needed for ${channel} groups: the chat id the bot sees the group under`,
          );
        }
        const network = values.network;
        if (network !== undefined && network !== 'full' && network !== 'gateway') {
          throw new UsageError('--network must be "full" or "gateway"');
        }
        const g = addGroupOrExplain(store, {
          id,
          channel,
          chatId: channel === 'local' ? id : (values.chat as string),
          name: values.name ?? id,
          isAdmin: false,
          ...(network ? { networkMode: network } : {}),
        });
        ctx.out(`added group ${g.id} (${g.channel}:${g.chatId}, network ${g.networkMode})`);
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
        if (!store.groups.remove(id))
          throw new UsageError(`there is no group "${id}" (see carapace groups list)`);
        ctx.out(`removed group ${id}; its folders under ${ctx.paths.groupsDir} are kept`);
        return 0;
      }
      case 'untaint': {
        const id = positionals[0];
        if (!id) throw new UsageError('groups untaint needs a group id');
        const g = store.groups.get(id);
        if (!g) throw new UsageError(`there is no group "${id}" (see carapace groups list)`);
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
