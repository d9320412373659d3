import { accountDefaultsOf } from '../channels/account-defaults.ts';
import { channelOfAccount } from '../channels/registry.ts';
import { groupCap, type CapConfig } from '../gateway/spend/spend-cap.ts';
import type { HostConfig } from './schema.ts';

/**
 * A group's persona, daily spend cap and credentials, each from the first layer that sets it: the group's
 * own `[groups.<id>]` (its cap in `[gateway].group_caps_usd`), then the account it is bound to
 * (`[channels.telegram.work]`, by the group's channel label), then the host-wide setting. Every reader asks
 * here (the run's prompt, the gateway's credential routes and caps, the router's cap check), read from the
 * config running now, so a reload applies to the next run or request.
 *
 * The admin group takes no account's defaults: it is the owner's one conversation on every account, and
 * the one chat that approves must not be handed a work account's credentials by the account's table.
 */

export type ConfigForDefaults = Pick<HostConfig, 'assistant' | 'channels' | 'gateway' | 'groups'>;

/** What the defaults are resolved for: a group as the store holds it. */
export interface GroupBinding {
  id: string;
  /** The account's label (`telegram`, `telegram.work`). */
  channel: string;
  isAdmin: boolean;
}

export interface Resolved<T> {
  value: T;
  /** Where it is written, for messages that say what to change (`[groups.family].persona`). */
  setting: string;
}

export interface GroupDefaults {
  persona: Resolved<string | undefined>;
  dailyCap: Resolved<number>;
  credentials: Resolved<readonly string[]>;
}

/** `[channels.telegram.work]` for the label `telegram.work`, `[channels.telegram]` for the default account. */
function accountTable(label: string): string {
  const channel = channelOfAccount(label);
  return label === channel
    ? `[channels.${channel}]`
    : `[channels.${channel}.${label.slice(channel.length + 1)}]`;
}

/** The first layer that sets a value, else the fallback. */
function firstSet<T>(
  layers: readonly (readonly [T | undefined, string])[],
  fallback: Resolved<T>,
): Resolved<T> {
  for (const [value, setting] of layers) if (value !== undefined) return { value, setting };
  return fallback;
}

/** The account defaults a group inherits: none for the admin group or a channel not configured now. */
function inherited(config: ConfigForDefaults, group: GroupBinding) {
  return group.isAdmin ? {} : accountDefaultsOf(config.channels[group.channel]);
}

/** The account layer of a group's cap: its account's `daily_cap_usd` and where that is written. */
function accountCapOf(
  config: ConfigForDefaults,
  group: GroupBinding,
): { usd: number; setting: string } | undefined {
  const usd = inherited(config, group).daily_cap_usd;
  return usd === undefined ? undefined : { usd, setting: `${accountTable(group.channel)}.daily_cap_usd` };
}

/**
 * The caps as the gateway and the run queue read them: `[gateway]` with the account layer, each group
 * looked up (`groupById`, one row by its key) only when its cap is asked for.
 */
export function capsWithAccounts(
  config: ConfigForDefaults,
  groupById: (groupId: string) => GroupBinding | undefined,
): HostConfig['gateway'] & Required<Pick<CapConfig, 'accountCap'>> {
  return {
    ...config.gateway,
    accountCap: (groupId) => {
      const group = groupById(groupId);
      return group && accountCapOf(config, group);
    },
  };
}

/** The group's persona, cap and credentials, each with the setting it comes from. */
export function groupDefaults(config: ConfigForDefaults, group: GroupBinding): GroupDefaults {
  const own = config.groups[group.id];
  const account = inherited(config, group);
  const table = accountTable(group.channel);
  const cap = groupCap(
    capsWithAccounts(config, (id) => (id === group.id ? group : undefined)),
    group.id,
  );
  return {
    persona: firstSet<string | undefined>(
      [
        [own?.persona, `[groups.${group.id}].persona`],
        [account.persona, `${table}.persona`],
      ],
      { value: config.assistant.persona, setting: '[assistant].persona' },
    ),
    dailyCap: { value: cap.usd, setting: cap.setting },
    credentials: firstSet<readonly string[]>(
      [
        [own?.credentials, `[groups.${group.id}].credentials`],
        [account.credentials, `${table}.credentials`],
      ],
      { value: [], setting: `[groups.${group.id}].credentials` },
    ),
  };
}
