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
    const quota = m.readOnly ? undefined : QUOTAS.find((q) => q.containerPath === m.containerPath);
    if (!quota) continue;
    folders.push({
      label: quota.label,
      path: m.hostPath,
      limitBytes: containers[quota.setting] * MB,
      setting: `[containers] ${quota.setting}`,
    });
  }
  return folders;
}

/** The writable folders that have a quota, and the setting that sizes each. */
const QUOTAS = [
  { containerPath: CONTAINER_GROUP_DIR, label: 'group folder', setting: 'group_quota_mb' },
  { containerPath: CONTAINER_SESSION_DIR, label: 'session folder', setting: 'session_quota_mb' },
] as const;
