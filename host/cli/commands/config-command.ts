import fs from 'node:fs';
import { parse as parseToml } from 'smol-toml';
import { formatProblem } from '../../config/config-error.ts';
import { diffConfigs, formatDiff } from '../../config/config-diff.ts';
import {
  configHistory,
  describeHistoryKeys,
  lastConfigChange,
  planRollback,
} from '../../config/config-history.ts';
import {
  createConfigFileStore,
  StaleConfigError,
  type ConfigFileStore,
} from '../../config/config-file-store.ts';
import { checkConfigPatch } from '../../config/config-patch.ts';
import { formatConfigPath, parseConfigPath, tomlValue } from '../../config/toml-edit.ts';
import { createLocalClient, HostUnreachable } from '../../channels/local/local-client.ts';
import { configUsage } from '../command-usage.ts';
import { EXAMPLE_CONFIG_FILE, UsageError, type CliContext } from '../cli-context.ts';
import { errorMessage } from '../../errors/error-message.ts';

/** A command-line value as TOML: `3`, `true`, `"Max"`, `["a", "b"]`. */
function parseValue(text: string): unknown {
  try {
    return (parseToml(`value = ${text}`) as { value: unknown }).value;
  } catch {
    throw new UsageError(
      `${text} is not a TOML value; strings need double quotes, e.g. carapace config set assistant.name '"Max"'`,
    );
  }
}

function get(ctx: CliContext, args: string[]): number {
  const [key] = args;
  if (!key || args.length > 1) throw new UsageError(`usage: ${configUsage}`);
  const keyPath = parseConfigPath(key);
  let value: unknown = ctx.config();
  for (const k of keyPath) {
    value = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[k] : undefined;
  }
  if (value === undefined) {
    ctx.err(`${formatConfigPath(keyPath)} is not set and has no default`);
    return 1;
  }
  const leaves = diffConfigs({}, value);
  if (leaves.length === 1 && leaves[0]?.key === '') ctx.out(tomlValue(value, key));
  else
    for (const l of leaves) ctx.out(`${formatConfigPath(keyPath)}.${l.key} = ${tomlValue(l.after, l.key)}`);
  return 0;
}

/**
 * Writes the file, then asks a running host to apply it through its socket, so the owner sees at once
 * whether it took it (the host's file watch would pick it up too, but could not answer here). Exit 1
 * when the running host refused or rolled it back; the file stays written either way.
 */
async function write(
  ctx: CliContext,
  store: ConfigFileStore,
  text: string,
  baseHash: string,
): Promise<number> {
  try {
    store.write(text, baseHash);
  } catch (err) {
    if (err instanceof StaleConfigError) throw new UsageError(err.message);
    throw err;
  }
  ctx.out(`wrote ${store.configFile} (previous version kept in ${store.historyDir})`);
  const client = createLocalClient({ socketFile: ctx.paths.socketFile, pidFile: ctx.paths.pidFile });
  try {
    const result = await client.reloadConfig();
    (result.ok ? ctx.out : ctx.err)(result.detail);
    return result.ok ? 0 : 1;
  } catch (err) {
    if (err instanceof HostUnreachable) {
      ctx.out('no host is running; it applies when the host starts');
      return 0;
    }
    ctx.err(
      `the running host did not answer the reload (${errorMessage(err)}); it picks the file up by itself`,
    );
    return 1;
  }
}

async function set(ctx: CliContext, store: ConfigFileStore, args: string[]): Promise<number> {
  const [key, valueText] = args;
  if (!key || valueText === undefined || args.length > 2) throw new UsageError(`usage: ${configUsage}`);
  const patch = [{ path: parseConfigPath(key), value: parseValue(valueText) }];
  const base = store.read();
  const checked = checkConfigPatch({
    file: store.configFile,
    text: base.text,
    patch,
    exampleText: fs.readFileSync(EXAMPLE_CONFIG_FILE, 'utf8'),
  });
  if (!checked.ok) {
    ctx.err(`not changed; the configuration would have ${checked.problems.length} problem(s):`);
    for (const p of checked.problems) ctx.err(`  - ${formatProblem(p)}`);
    return 2;
  }
  ctx.out(formatDiff(checked.changes));
  if (checked.changes.length === 0) return 0;
  // The owner at the terminal may change protected keys; they are named so the change is deliberate.
  for (const t of checked.protected)
    ctx.out(`note: ${t.key} is protected (${t.why}); an agent could not propose it`);
  for (const e of checked.effects) ctx.out(`note: this ${e.effect}`);
  return write(ctx, store, checked.text, base.hash);
}

function diff(ctx: CliContext, store: ConfigFileStore): number {
  const last = lastConfigChange(store);
  if (!last) {
    ctx.err('no backup yet: config.history is filled when carapace config set or rollback replaces the file');
    return 0;
  }
  ctx.out(`${store.configFile} against the version replaced at ${last.replacedAt}:`);
  ctx.out(formatDiff(last.changes));
  return 0;
}

/** Each backup with the keys the change that replaced it made, `n  when  keys`, newest first. */
function history(ctx: CliContext, store: ConfigFileStore): number {
  const entries = configHistory(store);
  if (entries.length === 0) ctx.err('no backup yet');
  for (const e of entries) ctx.out(`${e.n}\t${e.replacedAt}\t${describeHistoryKeys(e.keys)}`);
  if (entries.length > 0)
    ctx.out('(carapace config rollback <n> puts version n back; config diff shows the last change)');
  return 0;
}

async function rollback(ctx: CliContext, store: ConfigFileStore, args: string[]): Promise<number> {
  const n = Number(args[0] ?? '1');
  if (!Number.isInteger(n) || n < 1 || args.length > 1) throw new UsageError(`usage: ${configUsage}`);
  const plan = planRollback(store, n);
  if (!plan.ok) {
    if (plan.why === 'no-such-backup') throw new UsageError(plan.message);
    ctx.err(plan.message);
    return 2;
  }
  ctx.out(formatDiff(plan.changes));
  return write(ctx, store, plan.text, plan.baseHash);
}

export async function configCommand(ctx: CliContext, args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  const store = createConfigFileStore({ configFile: ctx.paths.configFile });
  switch (sub) {
    case 'get':
      return get(ctx, rest);
    case 'set':
      return set(ctx, store, rest);
    case 'diff':
      return diff(ctx, store);
    case 'history':
      return history(ctx, store);
    case 'rollback':
      return rollback(ctx, store, rest);
    default:
      throw new UsageError(`usage: ${configUsage}`);
  }
}
