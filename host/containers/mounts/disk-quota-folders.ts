import type { ContainersConfig } from '../run/container-config.ts';
import type { ContainerSpec } from '../run/container-spec.ts';
import type { QuotaFolder } from './disk-quota.ts';
import { CONTAINER_GROUP_DIR, CONTAINER_SESSION_DIR } from './group-mounts.ts';

const MB = 1024 * 1024;

/** The folders of a run that count against its group's quotas: its group folder and session folder. */
export function quotaFolders(
  mounts: ContainerSpec['mounts'],
  containers: Pick<ContainersConfig, 'group_quota_mb' | 'session_quota_mb'>,
): QuotaFolder[] {
  const folders: QuotaFolder[] = [];
  for (const m of mounts) {
    if (m.readOnly) continue;
    if (m.containerPath === CONTAINER_GROUP_DIR)
      folders.push({
        label: 'group folder',
        path: m.hostPath,
        limitBytes: containers.group_quota_mb * MB,
        setting: '[containers] group_quota_mb',
      });
    if (m.containerPath === CONTAINER_SESSION_DIR)
      folders.push({
        label: 'session folder',
        path: m.hostPath,
        limitBytes: containers.session_quota_mb * MB,
        setting: '[containers] session_quota_mb',
      });
  }
  return folders;
}
