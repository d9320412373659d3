import type { ConfigHealth } from './config-reloader.ts';

export interface ConfigHealthDeps {
  /** Each started channel's name and state. */
  channels(): Iterable<{ name: string; state: string }>;
  /** The owner's linked admin chats, by channel. */
  adminChats(): readonly { channel: string }[];
  /** `[admin] notify` of the config running now (undefined: every admin chat). */
  notifyChannels(): readonly string[] | undefined;
}

export interface HealthSnapshot {
  connected: string[];
}

/**
 * The health check after a config change: every channel that was connected before still is, and the
 * owner can still be reached (an admin chat is linked, and each channel `[admin] notify` names has one),
 * so a change can never leave the host unable to tell the owner about it.
 */
export function createConfigHealth(deps: ConfigHealthDeps): ConfigHealth<HealthSnapshot> {
  const connected = () => [...deps.channels()].filter((c) => c.state === 'connected').map((c) => c.name);
  return {
    snapshot: () => ({ connected: connected() }),
    problems(before) {
      const problems: string[] = [];
      const now = new Map([...deps.channels()].map((c) => [c.name, c.state]));
      for (const name of before.connected) {
        const state = now.get(name);
        if (state !== 'connected')
          problems.push(`the ${name} channel is ${state ?? 'gone'}, it was connected`);
      }
      const linked = new Set(deps.adminChats().map((c) => c.channel));
      if (linked.size === 0) problems.push('no admin chat is reachable');
      for (const name of deps.notifyChannels() ?? []) {
        if (!linked.has(name))
          problems.push(
            `[admin] notify names "${name}", which has no linked admin chat: notices would not reach you there`,
          );
      }
      return Promise.resolve(problems);
    },
  };
}
