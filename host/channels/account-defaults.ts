import { z } from 'zod';
import { LIMITS } from '../../container-agent/src/protocol.ts';

/**
 * What an account gives the groups bound to it unless a group's own `[groups.<id>]` says otherwise: the
 * assistant's persona, the daily spend cap and the credentials its runs may use. They sit in the account's
 * table beside the channel's own settings (`[channels.telegram.work] persona = "…"`), so a family bot and a
 * work bot on one host differ without repeating the same lines in every group. Which layer wins is decided in
 * one place, `config/group-defaults.ts`.
 */

/** How the assistant presents itself: a short text the agent's system prompt carries (never a rule over it). */
export const personaSchema = z
  .string()
  .trim()
  .min(1, 'must not be empty (leave the key out for no persona)')
  .max(LIMITS.persona, `must be at most ${LIMITS.persona} characters`);

export const accountDefaultsSchema = z
  .object({
    /** The persona of this account's groups; over `[assistant] persona`. */
    persona: personaSchema.optional(),
    /** The daily spend cap of each of this account's groups; over `[gateway] daily_cap_usd`. */
    daily_cap_usd: z.number().nonnegative().optional(),
    /** `[credentials.<name>]` this account's groups may use; over none. Not for the admin group. */
    credentials: z.array(z.string()).max(32).optional(),
  })
  .strict();

export type AccountDefaults = z.output<typeof accountDefaultsSchema>;

const DEFAULT_KEYS: readonly string[] = Object.keys(accountDefaultsSchema.shape);

const isTable = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * One account's table: the channel's settings parsed by the channel's own schema and the account defaults
 * by theirs, merged into one object (the adapter ignores the defaults; the host reads them with
 * `accountDefaultsOf`). Each keeps its own issues, unknown keys included, at their own paths.
 */
export function withAccountDefaults<C>(settings: z.ZodType<C>): z.ZodType<C & AccountDefaults> {
  return z.unknown().transform((value, ctx): C & AccountDefaults => {
    const own: Record<string, unknown> = {};
    const defaults: Record<string, unknown> = {};
    if (isTable(value))
      for (const [k, v] of Object.entries(value)) (DEFAULT_KEYS.includes(k) ? defaults : own)[k] = v;
    const parsedSettings = settings.safeParse(isTable(value) ? own : value);
    const parsedDefaults = accountDefaultsSchema.safeParse(defaults);
    // A finished issue's `input` is optional where a raw one's is not, hence the casts.
    if (!parsedSettings.success)
      for (const issue of parsedSettings.error.issues) ctx.issues.push(issue as z.core.$ZodRawIssue);
    if (!parsedDefaults.success)
      for (const issue of parsedDefaults.error.issues) ctx.issues.push(issue as z.core.$ZodRawIssue);
    if (!parsedSettings.success || !parsedDefaults.success) return z.NEVER;
    return { ...parsedSettings.data, ...parsedDefaults.data };
  });
}

/** The defaults an account's parsed settings carry (none for an account that set none, or an unknown one). */
export function accountDefaultsOf(settings: unknown): AccountDefaults {
  if (!isTable(settings)) return {};
  const parsed = accountDefaultsSchema.safeParse(
    Object.fromEntries(Object.entries(settings).filter(([k]) => DEFAULT_KEYS.includes(k))),
  );
  return parsed.success ? parsed.data : {};
}
