import fs from 'node:fs';
import { parseArgs } from 'node:util';
import Docker from 'dockerode';
import { findLeftovers, leftoverCount, removeLeftovers } from '../../containers/run/docker-leftovers.ts';
import { hostIsRunning } from '../../store/host-lock.ts';
import type { CliContext } from '../cli-context.ts';
import { describeLeftovers } from './doctor-docker-checks.ts';

/**
 * `carapace cleanup [--dry-run]`: removes the networks, firewall chains and containers of data folders that
 * are gone, and those of this data folder when no host runs on it (a host killed before it could stop).
 * With `[runner] kind = "kubernetes"`, the data folder's pods and NetworkPolicy in the cluster instead
 * (cleanup-cluster.ts).
 */
export async function cleanupCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { 'dry-run': { type: 'boolean', default: false } } });
  const idle = fs.existsSync(ctx.paths.dataDir) && !hostIsRunning(ctx.paths.dataDir);
  const { runner } = ctx.config();
  if (runner.kind === 'kubernetes') {
    const { cleanupCluster } = await import('./cleanup-cluster.ts');
    return cleanupCluster(ctx, runner.kubernetes, { dryRun: values['dry-run'], hostRunning: !idle });
  }
  const docker = new Docker();
  const leftovers = await findLeftovers(docker, idle ? { idleDataDir: ctx.paths.dataDir } : {});
  const lines = describeLeftovers(leftovers);
  if (leftoverCount(leftovers) === 0) {
    ctx.out('nothing to clean up');
    return 0;
  }
  if (values['dry-run']) {
    for (const line of lines) ctx.out(`would remove ${line}`);
    return 0;
  }
  await removeLeftovers(docker, leftovers);
  for (const line of lines) ctx.out(`removed ${line}`);
  return 0;
}
