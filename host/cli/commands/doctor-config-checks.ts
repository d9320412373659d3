import fs from 'node:fs';
import os from 'node:os';
import { ADMIN_GROUP_ID, adminGroupId } from '../../admin/admin-group.ts';
import { loadSecrets } from '../../config/secrets.ts';
import { loadMountAllowlist } from '../../containers/mounts/mount-allowlist.ts';
import { expandHome } from '../../containers/mounts/mount-paths.ts';
import { CleanRoomError } from '../../security/policies/admin-clean-room.ts';
import {
  assertStartableConfig,
  createHostServiceRegistry,
  knownServiceNames,
} from '../../config/service-grants.ts';
import { openStore } from '../../store/store.ts';
import type { Check, CheckResult } from './doctor-check.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { upstreamApiBase, type ProviderConfig } from '../../gateway/config.ts';
import { upstreamRequestHeaders } from '../../gateway/proxy/headers.ts';

/** The checks `start` makes before it runs (the admin clean room), through the very same function. */
export const checkStartable: Check = async (ctx) => {
  const config = ctx.config();
  let admin = adminGroupId(undefined);
  if (fs.existsSync(ctx.paths.databaseFile)) {
    const store = openStore({ file: ctx.paths.databaseFile });
    try {
      admin = adminGroupId(store.groups);
    } finally {
      store.close();
    }
  }
  try {
    assertStartableConfig(
      config,
      createHostServiceRegistry(() => config),
      admin,
    );
    return { name: 'start checks', ok: true, detail: 'the admin group reads nothing public' };
  } catch (err) {
    if (!(err instanceof CleanRoomError)) throw err;
    return {
      name: 'start checks',
      ok: false,
      detail: err.message,
      fix: `edit ${ctx.paths.configFile} as said above`,
    };
  }
};

/** A remote provider without its key fails every turn; only a server of your own may go keyless. */
export const checkProvider: Check = async (ctx) => {
  const { provider } = ctx.config();
  const name = provider.api_key_env;
  const key = loadSecrets({ envFile: ctx.paths.envFile, env: ctx.io.env }).get(name);
  const url = new URL(provider.base_url);
  const where = `${provider.kind} at ${provider.base_url}, model ${provider.model}`;
  const ownServer = isOwnServer(url.hostname);
  if (!key && !ownServer) {
    return {
      name: 'llm provider',
      ok: false,
      detail: `${where}; ${name} is not set, and ${url.host} refuses requests without a key`,
      fix: `put ${name}=<key> in ${ctx.paths.envFile} (chmod 600) or export it; or set [provider] base_url to a server of your own`,
    };
  }
  const keyNote = key ? `${name} is set` : `no key (${name} is not set), fine for a server of your own`;
  const probe = await probeProvider(provider, key ?? '');
  if (probe.kind === 'refused') {
    return {
      name: 'llm provider',
      ok: false,
      detail: `${where}; ${keyNote}, but the provider refused it (HTTP ${probe.status} on GET /models)`,
      fix: key
        ? `check the key in ${name} (a new one from the provider's dashboard), then run doctor again`
        : `this server wants a key: put ${name}=<key> in ${ctx.paths.envFile} (chmod 600)`,
    };
  }
  if (probe.kind === 'unreachable') {
    return {
      name: 'llm provider',
      ok: false,
      detail: `${where}; ${keyNote}, but ${url.host} cannot be reached: ${probe.reason}`,
      fix: `check [provider] base_url in ${ctx.paths.configFile} and that the machine reaches ${url.host}`,
    };
  }
  return {
    name: 'llm provider',
    ok: true,
    detail:
      `${where}; ${keyNote}; ` +
      (probe.kind === 'accepted'
        ? 'the provider accepted it (GET /models)'
        : `reachable, but it has no model list to test the key against (HTTP ${probe.status})`),
  };
};

type ProviderProbe =
  | { kind: 'accepted' }
  | { kind: 'refused'; status: number }
  | { kind: 'unlisted'; status: number }
  | { kind: 'unreachable'; reason: string };

/** How long doctor waits for the provider's model list; a healthy provider answers in well under a second. */
const PROVIDER_PROBE_TIMEOUT_MS = 10_000;

/**
 * One authenticated GET of the provider's model list, with the headers the gateway would add: the cheapest
 * request that tells a working key from a refused one without spending anything.
 */
async function probeProvider(provider: ProviderConfig, apiKey: string): Promise<ProviderProbe> {
  const headers = upstreamRequestHeaders({}, { kind: provider.kind, apiKey, anthropicAuth: 'x-api-key' });
  try {
    const res = await fetch(`${upstreamApiBase(provider)}/models`, {
      headers,
      redirect: 'manual',
      signal: AbortSignal.timeout(PROVIDER_PROBE_TIMEOUT_MS),
    });
    await res.body?.cancel();
    if (res.ok) return { kind: 'accepted' };
    if (res.status === 401 || res.status === 403) return { kind: 'refused', status: res.status };
    return { kind: 'unlisted', status: res.status };
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    return { kind: 'unreachable', reason: errorMessage(cause ?? err) };
  }
}

function isOwnServer(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '');
  return (
    h === 'localhost' ||
    h === '::1' ||
    /^127\./.test(h) ||
    /^10\./.test(h) ||
    /^192\.168\./.test(h) ||
    /^172\.(1[6-9]|2\d|3[01])\./.test(h) ||
    h.endsWith('.local') ||
    h.endsWith('.internal')
  );
}

/** Secrets readable by other users of the machine are not secrets. */
export const checkEnvFile: Check = async (ctx) => {
  const file = ctx.paths.envFile;
  if (!fs.existsSync(file))
    return { name: '.env', ok: true, detail: `no ${file} (keys from the environment)` };
  const mode = fs.statSync(file).mode & 0o777;
  const open = (mode & 0o077) !== 0;
  return {
    name: '.env',
    ok: !open,
    detail: `${file} mode ${mode.toString(8).padStart(3, '0')}${open ? ': other users can read the keys in it' : ''}`,
    ...(open ? { fix: `chmod 600 ${file}` } : {}),
  };
};

/** `[groups.<id>] services` naming a service that does not exist grants nothing and hides a typo. */
export const checkServiceNames: Check = async (ctx) => {
  const config = ctx.config();
  const known = knownServiceNames(
    config,
    createHostServiceRegistry(() => config),
  );
  const unknown = Object.entries(config.groups).flatMap(([id, g]) =>
    (g.services ?? []).filter((s) => !known.includes(s)).map((s) => ({ id, s })),
  );
  return {
    name: 'service names',
    ok: unknown.length === 0,
    detail: unknown.length
      ? `unknown service${unknown.length === 1 ? '' : 's'}: ${unknown.map((u) => `${u.s} (in [groups.${u.id}])`).join(', ')}; known: ${known.join(', ')}`
      : `every configured service exists (known: ${known.join(', ')})`,
    ...(unknown.length ? { fix: `correct or remove them in ${ctx.paths.configFile}` } : {}),
  };
};

/** `[groups.<id>]` for a group nobody added applies to nothing: usually a typo or a removed group. */
export const checkGroupSettings: Check = async (ctx) => {
  const config = ctx.config();
  let existing = [ADMIN_GROUP_ID];
  if (fs.existsSync(ctx.paths.databaseFile)) {
    const store = openStore({ file: ctx.paths.databaseFile });
    try {
      existing = store.groups.list().map((g) => g.id);
    } finally {
      store.close();
    }
  }
  const stray = Object.keys(config.groups).filter((id) => !existing.includes(id));
  return {
    name: 'group settings',
    ok: stray.length === 0,
    detail: stray.length
      ? `settings for group${stray.length === 1 ? '' : 's'} that do${stray.length === 1 ? 'es' : ''} not exist: ${stray.map((id) => `[groups.${id}]`).join(', ')}`
      : 'every [groups.<id>] is a group that exists',
    ...(stray.length
      ? {
          fix: `add the group (carapace groups add ${stray[0]} --channel …) or remove its section from ${ctx.paths.configFile}`,
        }
      : {}),
  };
};

/**
 * An allowed root reached through a symlink is allowed wherever the link points at the next start:
 * whoever can re-point the link chooses what containers mount.
 */
export const checkAllowlistSymlinks: Check = async (ctx) => {
  const result = loadMountAllowlist(ctx.paths.configDir);
  const linked: CheckResult['detail'][] = [];
  if (result.ok) {
    for (const root of result.allowlist.roots) {
      const expanded = expandHome(root.configuredPath, os.homedir());
      if (expanded.ok && expanded.path !== root.path) linked.push(`${root.configuredPath} → ${root.path}`);
    }
  }
  return {
    name: 'allowed roots',
    ok: linked.length === 0,
    detail: linked.length
      ? `allowed through a symlink: ${linked.join(', ')}`
      : 'no allowed root goes through a symlink',
    ...(linked.length ? { fix: `write the real path (after →) in ${ctx.paths.allowlistFile}` } : {}),
  };
};
