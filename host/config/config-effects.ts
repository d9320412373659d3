import { isDeepStrictEqual } from 'node:util';
import { allowedModels, type Pricing, type Rates } from '../gateway/config.ts';
import { priceFor, priceSource } from '../gateway/spend/price-table.ts';
import { ratesAt } from '../gateway/spend/pricing.ts';
import type { HostConfig } from './schema.ts';
import { formatConfigPath } from './toml-edit.ts';

/**
 * What a config change does, judged on the effective configuration before and after it (defaults
 * applied, the provider kind resolved into its base URL and key variable, model lists and prices
 * resolved), not on the names of the keys it touches: a price of 0 lifts a spend cap as surely as
 * raising it, and `provider.kind` moves the provider key without touching `base_url`.
 *
 * `refuse`: only the owner may make this change, by hand (it moves secrets or raises the cap itself).
 * `ask`: the owner may want it, so it goes to them, with the effect said plainly in the approval text.
 */
export interface ConfigEffect {
  /** The key the effect is about (for the audit and the CLI's notes). */
  key: string;
  /** What the change does, in words the owner reads ("this removes the spend cap for model X"). */
  effect: string;
  verdict: 'refuse' | 'ask';
}

interface CountedRates {
  input: number;
  output: number;
}

/**
 * A model's counted price per million tokens, in USD, for a short prompt and for one past any long-context
 * threshold, read through the gateway's own price rules, so this judges prices exactly as the spend cap
 * will count them (the shipped table and the ceiling for unpriced models are followed here without a change).
 */
function countedPrice(model: string, pricing: Pricing): { short: CountedRates; long: CountedRates } {
  const price = priceFor(model, pricing);
  const counted = (rates: Rates) => ({ input: rates.input_per_mtok_usd, output: rates.output_per_mtok_usd });
  return { short: counted(ratesAt(price, 0)), long: counted(ratesAt(price, Number.MAX_SAFE_INTEGER)) };
}

const differs = (a: CountedRates, b: CountedRates) => a.input !== b.input || a.output !== b.output;
const free = (rates: CountedRates) => rates.input === 0 || rates.output === 0;
const lowered = (was: CountedRates, is: CountedRates) => was.input > is.input || was.output > is.output;

const usd = (n: number) => `${n} USD`;

/** Each group's effective daily cap (`*`: every group without its own). */
function groupCaps(config: HostConfig): Map<string, number> {
  const caps = new Map<string, number>([['*', config.gateway.daily_cap_usd]]);
  for (const [g, cap] of Object.entries(config.gateway.group_caps_usd)) caps.set(g, cap);
  return caps;
}

function spendEffects(before: HostConfig, after: HostConfig): ConfigEffect[] {
  const effects: ConfigEffect[] = [];
  const oldCaps = groupCaps(before);
  const newCaps = groupCaps(after);
  for (const group of new Set([...oldCaps.keys(), ...newCaps.keys()])) {
    const was = oldCaps.get(group) ?? before.gateway.daily_cap_usd;
    const is = newCaps.get(group) ?? after.gateway.daily_cap_usd;
    if (is <= was) continue;
    const key = group === '*' ? 'gateway.daily_cap_usd' : `gateway.group_caps_usd.${group}`;
    const whose = group === '*' ? 'the daily spend cap' : `group ${group}'s daily spend cap`;
    effects.push({ key, effect: `raises ${whose} from ${usd(was)} to ${usd(is)}`, verdict: 'refuse' });
  }

  const reachableBefore = allowedModels(before.gateway, before.provider);
  for (const model of [...allowedModels(after.gateway, after.provider)].sort()) {
    const prices = { was: countedPrice(model, before.gateway), is: countedPrice(model, after.gateway) };
    const [was, is] = [prices.was.short, prices.is.short];
    // An unpriced model's counted price is the ceiling, which unknown_model_price (or a dearer entry) sets.
    const key =
      priceSource(model, after.gateway.prices) === 'ceiling'
        ? 'gateway.unknown_model_price'
        : formatConfigPath(['gateway', 'prices', model]);
    if (free(is) || free(prices.is.long)) {
      if (!reachableBefore.has(model)) {
        effects.push({
          key,
          effect: `lets agents use model ${model}, which has no price: the spend cap does not count its use`,
          verdict: 'ask',
        });
      } else if (lowered(was, is) || lowered(prices.was.long, prices.is.long)) {
        effects.push({
          key,
          effect: `removes the spend cap for model ${model}: its use would be counted as costing nothing`,
          verdict: 'ask',
        });
      }
    } else if (lowered(was, is) || lowered(prices.was.long, prices.is.long)) {
      const [wasLong, isLong] = [prices.was.long, prices.is.long];
      effects.push({
        key,
        effect:
          `lowers the price counted for model ${model} (input ${usd(was.input)} → ${usd(is.input)}, ` +
          `output ${usd(was.output)} → ${usd(is.output)} per million tokens` +
          (lowered(wasLong, isLong) && (differs(was, wasLong) || differs(is, isLong))
            ? `; for long prompts input ${usd(wasLong.input)} → ${usd(isLong.input)}, output ${usd(wasLong.output)} → ${usd(isLong.output)}`
            : '') +
          `): the spend cap then allows more of it`,
        verdict: 'ask',
      });
    }
  }
  return effects;
}

/** Where secrets come from and where the provider key is sent: the resolved values, whatever set them. */
function secretSourceEffects(before: HostConfig, after: HostConfig): ConfigEffect[] {
  const effects: ConfigEffect[] = [];
  if (before.provider.base_url !== after.provider.base_url)
    effects.push({
      key: 'provider.base_url',
      effect: `sends the provider key to ${after.provider.base_url} instead of ${before.provider.base_url}`,
      verdict: 'refuse',
    });
  if (before.provider.api_key_env !== after.provider.api_key_env)
    effects.push({
      key: 'provider.api_key_env',
      effect: `uses the secret in ${after.provider.api_key_env} as the provider key instead of ${before.provider.api_key_env}`,
      verdict: 'refuse',
    });
  const channels = (c: HostConfig) => c.channels as Record<string, Record<string, unknown> | undefined>;
  for (const name of new Set([...Object.keys(channels(before)), ...Object.keys(channels(after))])) {
    const was = channels(before)[name] ?? {};
    const is = channels(after)[name] ?? {};
    for (const field of new Set([...Object.keys(was), ...Object.keys(is)])) {
      if (!/_env$|^owner_user_id$/.test(field) || isDeepStrictEqual(was[field], is[field])) continue;
      effects.push({
        key: `channels.${name}.${field}`,
        effect: field.endsWith('_env')
          ? `changes which secret channel ${name} uses`
          : `changes who the owner is on ${name}`,
        verdict: 'refuse',
      });
    }
  }
  return effects;
}

const added = (before: readonly string[], after: readonly string[]) =>
  after.filter((x) => !before.includes(x));

/** What agents can reach, and protections turned off. */
function reachAndProtectionEffects(before: HostConfig, after: HostConfig): ConfigEffect[] {
  const effects: ConfigEffect[] = [];
  for (const host of added(before.web_fetch.allow_private_hosts, after.web_fetch.allow_private_hosts))
    effects.push({
      key: 'web_fetch.allow_private_hosts',
      effect: `lets web_fetch reach ${host}, a host on the private network`,
      verdict: 'ask',
    });
  for (const [id, group] of Object.entries(after.groups)) {
    // An unset list means the default; a list that names a service the group did not list is a grant.
    for (const service of added(before.groups[id]?.services ?? [], group.services ?? []))
      effects.push({
        key: `groups.${id}.services`,
        effect: `lets group ${id} call the ${service} service`,
        verdict: 'ask',
      });
  }
  for (const [id, group] of Object.entries(after.groups)) {
    for (const name of added(before.groups[id]?.credentials ?? [], group.credentials ?? [])) {
      const c = after.credentials[name];
      const what =
        c === undefined
          ? ''
          : c.kind === 'git'
            ? ` (clone, fetch and push ${c.remote ?? ''} through the host)`
            : ` (${(c.allow ?? []).join('; ')} on ${c.base_url ?? ''})`;
      effects.push({
        key: `groups.${id}.credentials`,
        effect: `lets group ${id} use the ${name} credential${what}`,
        verdict: 'ask',
      });
    }
  }
  for (const [id, group] of Object.entries(before.groups)) {
    if (group.contains_secrets && !after.groups[id]?.contains_secrets)
      effects.push({
        key: `groups.${id}.contains_secrets`,
        effect: `turns off secret protection for group ${id}: runs that read its workspace are no longer marked as holding secrets`,
        verdict: 'ask',
      });
  }
  if (!isDeepStrictEqual(before.security, after.security))
    effects.push({
      key: 'security',
      effect: 'changes the security policy (the Cop that reviews actions, how long approvals wait)',
      verdict: 'refuse',
    });
  return effects;
}

/** Every protected effect of going from `before` to `after`; empty for an ordinary change. */
export function configEffects(before: HostConfig, after: HostConfig): ConfigEffect[] {
  return [
    ...spendEffects(before, after),
    ...secretSourceEffects(before, after),
    ...reachAndProtectionEffects(before, after),
  ];
}
