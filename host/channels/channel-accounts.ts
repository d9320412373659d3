import { z } from 'zod';

/**
 * Accounts of one channel: several Telegram bots or WhatsApp numbers on one host. `[channels.<channel>]`
 * holds either one account's settings (today's shape: the default account) or one table per named account
 * (`[channels.telegram.family]`, `[channels.telegram.work]`). The two shapes are never mixed in one table:
 * whether top-level keys would be defaults for the named accounts or a further account is a guess, and a
 * guessed bot token is a bot answering the wrong people.
 */

/** The account today's single `[channels.<channel>]` table is; its folders stay where they always were. */
export const DEFAULT_ACCOUNT = 'default';

export const ACCOUNT_NAME = /^[a-z0-9][a-z0-9-]{0,31}$/;

/** One account as the host starts it. */
export interface ChannelAccount<C = unknown> {
  channel: string;
  /** `default` for the single-table shape, else the table's name. */
  name: string;
  settings: C;
}

const isTable = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * `[channels.<channel>]` in either shape, parsed to its accounts by name. `settingsKeys` are the keys of one
 * account's settings: a table under one of them (Telegram's `webhook`) is a setting, never an account.
 */
export function channelAccountsSchema<C>(
  channel: string,
  settings: z.ZodType<C>,
  settingsKeys: readonly string[],
) {
  return z.record(z.string(), z.unknown()).transform((section, ctx): Record<string, C> => {
    const keys = Object.keys(section);
    const accountKeys = keys.filter((k) => !settingsKeys.includes(k) && isTable(section[k]));
    const parseInto = (out: Record<string, C>, name: string, value: unknown, at: string[]) => {
      const parsed = settings.safeParse(value);
      if (parsed.success) out[name] = parsed.data;
      // The account's own issues, kept whole (an unknown key stays one), under the account's key; a
      // finished issue's `input` is optional where a raw one's is not, hence the cast.
      else
        for (const issue of parsed.error.issues)
          ctx.issues.push({ ...issue, path: [...at, ...issue.path] } as z.core.$ZodRawIssue);
    };
    const out: Record<string, C> = {};
    if (accountKeys.length === 0) {
      parseInto(out, DEFAULT_ACCOUNT, section, []);
      return out;
    }
    const settingKeys = keys.filter((k) => !accountKeys.includes(k));
    if (settingKeys.length > 0) {
      ctx.issues.push({
        code: 'custom',
        input: section,
        path: [],
        message:
          `mixes one account's settings (${settingKeys.join(', ')}) with account tables (${accountKeys.join(', ')}). ` +
          `Either keep one account and write its settings directly under [channels.${channel}], or move every ` +
          `setting into its account's table, e.g. [channels.${channel}.${accountKeys[0]}]`,
      });
      return z.NEVER;
    }
    for (const name of accountKeys) {
      if (!ACCOUNT_NAME.test(name)) {
        ctx.issues.push({
          code: 'custom',
          input: name,
          path: [name],
          message:
            'is not an account name: use lowercase letters, digits and "-" (at most 32, starting with a letter ' +
            `or digit), e.g. [channels.${channel}.${suggestedName(name)}]`,
        });
        continue;
      }
      parseInto(out, name, section[name], [name]);
    }
    return out;
  });
}

/** A valid account name close to what the user wrote, for the error's example. */
function suggestedName(name: string): string {
  const s = name
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 32);
  return s === '' ? 'work' : s;
}

/**
 * Every configured account, channel by channel in the given order and by name within a channel, from the
 * parsed `[channels]` (an absent section is an unconfigured channel: no accounts).
 */
export function listChannelAccounts(
  channels: Record<string, Record<string, unknown> | undefined>,
  order: readonly string[] = Object.keys(channels),
): ChannelAccount[] {
  return order.flatMap((channel) => {
    const accounts = channels[channel];
    if (accounts === undefined) return [];
    return Object.keys(accounts)
      .sort()
      .map((name) => ({ channel, name, settings: accounts[name] }));
  });
}

/** How status lines and logs name an account: `telegram` for the default, `telegram.work` for a named one. */
export function accountLabel(account: Pick<ChannelAccount, 'channel' | 'name'>): string {
  return account.name === DEFAULT_ACCOUNT ? account.channel : `${account.channel}.${account.name}`;
}

/**
 * The accounts (by label, as `[channels]` parses to them) present in only one of two configs: added or
 * removed whole, which a reload starts or stops while an edit of a running account waits for the restart.
 */
export function accountsAddedOrRemoved(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): { added: string[]; removed: string[] } {
  return {
    added: Object.keys(after).filter((label) => before[label] === undefined),
    removed: Object.keys(before).filter((label) => after[label] === undefined),
  };
}
