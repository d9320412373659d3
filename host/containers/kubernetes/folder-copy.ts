import { PassThrough, type Readable } from 'node:stream';
import type { Exec } from '@kubernetes/client-node';
import { openGuardedRoot, type GuardedRoot } from '../../safe-fs/guarded-root.ts';
import type { ContainersConfig } from '../run/container-config.ts';
import {
  GROUP_FOLDER,
  GroupSyncError,
  packGroupFolder,
  SESSION_FOLDER,
  unpackGroupChanges,
  type FolderNames,
  type GroupChanges,
  type GroupSnapshot,
} from './group-sync.ts';
import { execInPod, type ExecResult } from './pod-exec.ts';
import { SESSION_CONTAINER } from './pod-spec.ts';

/** One folder of a run's pod: the container that copies it (one that outlives the agent) and its path there. */
export interface PodFolder {
  namespace: string;
  pod: string;
  container: string;
  dir: string;
  /** The umask the copy in extracts under: 0002 for the group folder (shared gid), 0077 for the session. */
  umask: '0002' | '0077';
  names: FolderNames;
}

/** The host's copy (a tar stream from packGroupFolder) into the pod's folder, made first when missing. */
export function copyFolderIn(exec: Exec, folder: PodFolder, tar: Readable): Promise<ExecResult> {
  const mode = folder.umask === '0077' ? '0700' : '2775';
  return execInPod(
    exec,
    folder,
    [
      '/bin/sh',
      '-c',
      `umask ${folder.umask} && mkdir -p -m ${mode} ${folder.dir} && exec tar -x -C ${folder.dir}`,
    ],
    { stdin: tar },
  );
}

/**
 * The folder as the run left it, back through the guarded root (group-sync.ts): what differs from `before`
 * is written, at most `maxBytes` in all; a quota breach or a short copy throws a GroupSyncError.
 */
export async function copyFolderBack(
  exec: Exec,
  folder: PodFolder,
  root: GuardedRoot,
  before: GroupSnapshot,
  maxBytes: number,
): Promise<GroupChanges> {
  const out = new PassThrough();
  const result = execInPod(exec, folder, ['tar', '-c', '-C', folder.dir, '.'], { stdout: out });
  // The client ends `out` with the command's status; an exec that never opened must end it too, or the
  // unpacking would wait for ever (what it took so far stays; nothing is removed from a partial stream).
  void result.then(() => {
    if (!out.writableEnded) out.end();
  });
  const changes = await unpackGroupChanges(root, out, {
    before,
    maxBytes,
    complete: async () => (await result).ok,
    folder: folder.names,
  });
  const { ok, detail } = await result;
  if (!ok)
    throw new GroupSyncError(
      `the copy back of the ${folder.names.name} stopped short (${detail}); ${changes.written.length} files were taken back`,
    );
  return changes;
}

/** A run's folder on the host, packed for its pod: where it goes in the pod (the pod's name comes later). */
export interface RunFolder {
  quota: number;
  root: GuardedRoot;
  packed: Awaited<ReturnType<typeof packGroupFolder>>;
  pod: Omit<PodFolder, 'namespace' | 'pod'>;
}

/** The group's folder and its session, read on the host and packed for the pod, each within its quota. */
export function packRunFolders(
  deps: {
    groupDir(groupId: string): string;
    sessionDir(groupId: string): string;
    containers: Pick<ContainersConfig, 'group_quota_mb' | 'session_quota_mb'>;
  },
  groupId: string,
): Promise<RunFolder[]> {
  const mb = 1024 * 1024;
  const folders = [
    {
      host: deps.groupDir(groupId),
      quota: deps.containers.group_quota_mb * mb,
      createMode: 0o2775,
      pod: { container: 'commands', dir: '/workspace/group', umask: '0002', names: GROUP_FOLDER } as const,
    },
    {
      host: deps.sessionDir(groupId),
      quota: deps.containers.session_quota_mb * mb,
      createMode: 0o700,
      pod: {
        container: SESSION_CONTAINER,
        dir: '/workspace/session',
        umask: '0077',
        names: SESSION_FOLDER,
      } as const,
    },
  ];
  return Promise.all(
    folders.map(async (f) => {
      const root = await openGuardedRoot(f.host, {
        create: { mode: f.createMode },
        label: `the ${f.pod.names.name}`,
      });
      return { quota: f.quota, pod: f.pod, root, packed: await packGroupFolder(root, f.quota, f.pod.names) };
    }),
  );
}
