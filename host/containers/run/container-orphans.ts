import type Docker from 'dockerode';
import { LABEL_HOST, LABEL_MANAGED } from './container-spec.ts';
import { isDockerAlreadyGone } from '../docker-errors.ts';

/**
 * Removes (force) every carapace-managed container that belongs to another host instance: left
 * over from a host that crashed, they run unsupervised. Our own instance's containers are kept.
 * Returns how many were removed.
 */
export async function removeOrphans(
  docker: Docker,
  options: {
    exceptHostInstanceId: string;
    /** Narrows the sweep to containers that also carry these labels (tests use it to stay in their lane). */
    onlyWithLabels?: Record<string, string>;
  },
): Promise<number> {
  const extra = Object.entries(options.onlyWithLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  const containers = await docker.listContainers({
    all: true,
    filters: { label: [`${LABEL_MANAGED}=1`, ...extra] },
  });
  let removed = 0;
  for (const info of containers) {
    if (info.Labels?.[LABEL_HOST] === options.exceptHostInstanceId) continue;
    try {
      await docker.getContainer(info.Id).remove({ force: true });
      removed += 1;
    } catch (error) {
      // Already gone (AutoRemove raced us): it is no longer an orphan either way.
      if (!isDockerAlreadyGone(error)) throw error;
      removed += 1;
    }
  }
  return removed;
}
