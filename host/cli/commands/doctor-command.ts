import fs from 'node:fs';
import path from 'node:path';
import Docker from 'dockerode';
import { ConfigError } from '../../config/config-error.ts';
import { loadStartConfig } from '../../config/safe-start.ts';
import { AGENT_IMAGE_REPOSITORY } from '../../containers/image/image-ensure.ts';
import { loadMountAllowlist } from '../../containers/mounts/mount-allowlist.ts';
import { nodeVersionProblem } from '../node-support.js';
import { EXAMPLE_CONFIG_FILE, PROJECT_ROOT, type CliContext } from '../cli-context.ts';
import type { Check, CheckResult } from './doctor-check.ts';
import {
  checkAllowlistSymlinks,
  checkEnvFile,
  checkGroupSettings,
  checkProvider,
  checkServiceNames,
  checkStartable,
} from './doctor-config-checks.ts';
import { checkLeftovers } from './doctor-docker-checks.ts';
import { checkRunner } from './doctor-runner-checks.ts';
import { checkMemoryIndex } from './doctor-memory-check.ts';
import { checkModelPrices } from './doctor-price-checks.ts';
import { checkCredentials, checkMcpServers } from './doctor-service-checks.ts';
import { checkChannels, checkChannelSetups, checkDeliveries } from './channel-checks.ts';
import { errorMessage } from '../../errors/error-message.ts';

export const checkNode: Check = async () => {
  const problem = nodeVersionProblem(path.join(PROJECT_ROOT, 'package.json'));
  return {
    name: 'node',
    ok: problem === undefined,
    detail: `Node ${process.versions.node}`,
    ...(problem ? { fix: problem } : {}),
  };
};

export const checkConfig: Check = async (ctx) => {
  try {
    ctx.config();
    const exists = fs.existsSync(ctx.paths.configFile);
    return {
      name: 'config',
      ok: true,
      detail: exists ? ctx.paths.configFile : `no ${ctx.paths.configFile}; using defaults`,
    };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return {
      name: 'config',
      ok: false,
      detail: `${err.message}${safeModeNote(ctx)}`,
      fix: `edit ${ctx.paths.configFile} as listed above`,
    };
  }
};

/** What a start does with the broken file: run on the last good copy (safe mode), or not start at all. */
function safeModeNote(ctx: CliContext): string {
  try {
    const start = loadStartConfig({ configFile: ctx.paths.configFile, exampleFile: EXAMPLE_CONFIG_FILE });
    if (!start.safeMode) return '';
    return (
      `\nThe host runs (or starts) in safe mode on the last good configuration, ${start.safeMode.lastGoodFile} ` +
      `(saved ${start.safeMode.savedAt}); a repaired file is picked up by the running host.`
    );
  } catch {
    return '\nThere is no last good configuration to fall back on: the host does not start until the file is repaired.';
  }
}

export const checkDataDir: Check = async (ctx) => {
  try {
    fs.mkdirSync(ctx.paths.dataDir, { recursive: true, mode: 0o700 });
    fs.accessSync(ctx.paths.dataDir, fs.constants.W_OK);
    return { name: 'data folder', ok: true, detail: ctx.paths.dataDir };
  } catch (err) {
    return {
      name: 'data folder',
      ok: false,
      detail: `${ctx.paths.dataDir}: ${errorMessage(err)}`,
      fix: 'set CARAPACE_DATA_DIR to a folder you can write, or fix its permissions',
    };
  }
};

export function checkDocker(docker: Docker = new Docker()): Check {
  return async () => {
    try {
      const info = (await Promise.race([
        docker.version(),
        new Promise((_, reject) => setTimeout(() => reject(new Error('no answer within 5 s')), 5000).unref()),
      ])) as { Version: string };
      return { name: 'docker engine', ok: true, detail: `Docker ${info.Version}` };
    } catch (err) {
      return {
        name: 'docker engine',
        ok: false,
        detail: `not reachable: ${errorMessage(err)}`,
        fix: 'install and start Docker (Debian: apt-get install docker.io && dockerd &), or add your user to the docker group',
      };
    }
  };
}

export async function runChecks(ctx: CliContext, checks: Check[]): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const check of checks) {
    try {
      results.push(await check(ctx));
    } catch (err) {
      results.push({
        name: check.name || 'check',
        ok: false,
        detail: `the check itself failed: ${errorMessage(err)}`,
      });
    }
  }
  return results;
}

/** Every check `carapace doctor` runs, in order (the web console's Health page runs the same). */
export function doctorChecks(): Check[] {
  return [
    checkNode,
    checkConfig,
    checkDataDir,
    checkStartable,
    checkProvider,
    checkModelPrices(),
    checkEnvFile,
    checkServiceNames,
    checkMcpServers,
    checkCredentials,
    checkGroupSettings,
    checkAllowlist,
    checkAllowlistSymlinks,
    checkDocker(),
    checkRunner,
    checkAgentImage(),
    checkIsolation,
    checkLeftovers(),
    checkChannels,
    checkChannelSetups,
    checkDeliveries,
    checkMemoryIndex,
  ];
}

export async function doctorCommand(ctx: CliContext, extraChecks: Check[] = []): Promise<number> {
  const results = await runChecks(ctx, [...doctorChecks(), ...extraChecks]);
  for (const r of results) {
    ctx.out(`${r.ok ? 'ok  ' : 'FAIL'}  ${r.name}: ${r.detail}`);
    if (!r.ok && r.fix) ctx.out(`      fix: ${r.fix}`);
  }
  const failed = results.filter((r) => !r.ok).length;
  ctx.out(failed === 0 ? 'All checks passed.' : `${failed} check${failed === 1 ? '' : 's'} failed.`);
  return failed === 0 ? 0 : 1;
}

export const checkAllowlist: Check = async (ctx) => {
  const result = loadMountAllowlist(ctx.paths.configDir);
  if (result.ok) {
    const roots = result.allowlist.roots.length;
    const unusable = result.allowlist.unusableRoots.map((r) => `${r.configuredPath}: ${r.reason}`);
    return {
      name: 'mount allowlist',
      ok: unusable.length === 0,
      detail: `${roots} allowed root${roots === 1 ? '' : 's'}${unusable.length ? `; unusable: ${unusable.join('; ')}` : ''}`,
      ...(unusable.length ? { fix: `fix or remove those roots in ${ctx.paths.allowlistFile}` } : {}),
    };
  }
  // A missing allowlist is a safe default (no extra mounts), not a failure; an invalid one is.
  const missing = !fs.existsSync(ctx.paths.allowlistFile);
  return {
    name: 'mount allowlist',
    ok: missing,
    detail: missing ? 'none: extra mounts are blocked (that is fine if you need none)' : result.reason,
    ...(missing
      ? {}
      : { fix: `correct ${ctx.paths.allowlistFile} (see config/mount-allowlist.example.toml)` }),
  };
};

export function checkAgentImage(docker: Docker = new Docker()): Check {
  return async () => {
    try {
      const images = await docker.listImages({ filters: { reference: [`${AGENT_IMAGE_REPOSITORY}:*`] } });
      const tags = images.flatMap((i) => i.RepoTags ?? []);
      return tags.length
        ? {
            name: 'agent image',
            ok: true,
            detail: `${tags.join(', ')} (start rebuilds it when the agent changed)`,
          }
        : {
            name: 'agent image',
            ok: false,
            detail: 'not built yet',
            fix: 'carapace image build (start also builds it)',
          };
    } catch (err) {
      return { name: 'agent image', ok: false, detail: `cannot ask Docker: ${errorMessage(err)}` };
    }
  };
}

export const checkIsolation: Check = async () => {
  const root = process.getuid?.() === 0;
  return {
    name: 'gateway-mode isolation',
    ok: root,
    detail: root
      ? 'running as root: the gateway network firewall can be applied'
      : 'not root: the firewall that keeps "gateway" containers away from host services cannot be applied, so those groups will not run',
    ...(root
      ? {}
      : {
          fix: 'run Carapace as root (the host sets the rules at each start), or use network mode "full" for those groups',
        }),
  };
};
