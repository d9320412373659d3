import type { ChannelRegistry } from '../channels/registry.ts';
import { LOCAL_CHANNEL } from '../channels/local/local-names.ts';
import { adminChatRefusal } from '../channels/registry.ts';
import { GroupExistsError, type GroupRecord } from '../store/groups-store.ts';
import type { Store } from '../store/store.ts';
import { errorMessage } from '../errors/error-message.ts';

/** A registration the owner must fix (the message says how); anything else thrown is a fault. */
export class RegistrationRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegistrationRefused';
  }
}

export interface GroupRegistration {
  id: string;
  channel: string;
  /** Required for every channel but the console's (whose chat is the group itself). */
  chatId?: string;
  name?: string;
  network?: string;
}

/**
 * Registers a group, as `carapace groups add` and the web console's Groups page do: the channel must be
 * configured, the chat id must be one of its chats and neither its admin chat nor one it cannot serve, the
 * network mode known, the id free.
 */
export function registerGroup(
  deps: { store: Pick<Store, 'groups'>; registry: Pick<ChannelRegistry, 'checkRegistration' | 'names'> },
  r: GroupRegistration,
): GroupRecord {
  const refuse = (fn: () => void) => {
    try {
      fn();
    } catch (err) {
      throw new RegistrationRefused(errorMessage(err));
    }
  };
  refuse(() => deps.registry.checkRegistration(r.channel));
  if (r.channel !== LOCAL_CHANNEL && !r.chatId)
    throw new RegistrationRefused(
      `--chat is needed for ${r.channel} groups: the chat id the bot sees the group under (carapace chats lists them)`,
    );
  // A local group's chat is the group itself; its id is checked by the store.
  const chatId = r.channel === LOCAL_CHANNEL ? r.id : (r.chatId as string);
  if (r.channel !== LOCAL_CHANNEL) refuse(() => deps.registry.checkRegistration(r.channel, chatId));
  // The admin group's own chat (the console's `main`) is the admin conversation on any channel.
  if (deps.store.groups.findByChat(r.channel, chatId)?.isAdmin)
    throw new RegistrationRefused(adminChatRefusal(r.channel, chatId));
  if (r.network !== undefined && r.network !== 'full' && r.network !== 'gateway')
    throw new RegistrationRefused('--network must be "full" or "gateway"');
  try {
    return deps.store.groups.add({
      id: r.id,
      channel: r.channel,
      chatId,
      name: r.name ?? r.id,
      isAdmin: false,
      ...(r.network ? { networkMode: r.network } : {}),
    });
  } catch (err) {
    // A duplicate or malformed id is the owner's input to fix, not a crash.
    if (err instanceof GroupExistsError || /is not valid/.test(errorMessage(err)))
      throw new RegistrationRefused(errorMessage(err));
    throw err;
  }
}
