import type Docker from 'dockerode';

interface MemoryStats {
  memory_stats?: {
    usage?: number;
    stats?: { inactive_file?: number; total_inactive_file?: number };
  };
}

/**
 * A running container's memory in use, in bytes, as `docker stats` counts it: the cgroup's usage less its
 * inactive page cache (which the kernel reclaims first). Undefined when the engine reports none.
 */
export async function containerMemoryBytes(docker: Docker, id: string): Promise<number | undefined> {
  const stats = (await docker
    .getContainer(id)
    .stats({ stream: false, 'one-shot': true } as { stream: false })) as MemoryStats;
  const usage = stats.memory_stats?.usage;
  if (typeof usage !== 'number') return undefined;
  const cache =
    stats.memory_stats?.stats?.inactive_file ?? stats.memory_stats?.stats?.total_inactive_file ?? 0;
  return Math.max(0, usage - cache);
}
