import { GROUP_ID_PATTERN } from '../../../container-agent/src/protocol.ts';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { renderAgentMdTemplate } from './agent-md-template.ts';
import type { MountAllowlistResult } from './mount-allowlist.ts';
import { mergeBlockedPatterns } from './mount-patterns.ts';
import { expandHome, isWithin, overlaps } from './mount-paths.ts';
import type { HiddenPath, ShadowSources } from './mount-shadows.ts';
import { ensureShadowSources, planShadows } from './mount-shadows.ts';
import { resolveProtectedPath, validateExtraMount } from './mount-validation.ts';
import type { ShadowWalkCache } from './shadow-walk-cache.ts';
import type { WalkSync } from './tree-watch.ts';

export { GROUP_ID_PATTERN };

const GROUP_ID_RULE =
  'use 1-64 characters from a-z, 0-9, "_" and "-", starting with a letter or digit (e.g. "family-chat")';

/** Group ids become folder names; this is what keeps `../x` from ever reaching a path. */
export function assertValidGroupId(id: unknown): asserts id is string {
  if (typeof id !== 'string' || !GROUP_ID_PATTERN.test(id)) {
    throw new Error(`invalid group id ${JSON.stringify(id) ?? String(id)}: ${GROUP_ID_RULE}`);
  }
}

export const CONTAINER_GROUP_DIR = '/workspace/group';
export const CONTAINER_SESSION_DIR = '/workspace/session';
export const CONTAINER_PROJECT_DIR = '/workspace/project';
export const AGENT_MEMORY_FILE = 'AGENT.md';

export type MountKind = 'group' | 'session' | 'project' | 'extra' | 'shadow';

export interface Mount {
  hostPath: string;
  containerPath: string;
  readOnly: boolean;
  kind: MountKind;
  /** Why a mount is read-only despite a request, or what a shadow hides. */
  note?: string;
}

export interface RejectedMount {
  request: unknown;
  reason: string;
}

export interface GroupMountPlan {
  groupId: string;
  isAdmin: boolean;
  /** Parents before children, so nested binds (shadows) come after the mount they sit in. */
  mounts: Mount[];
  rejected: RejectedMount[];
  /** Allowlist status worth showing the owner (missing file, unusable roots). */
  notes: string[];
  /**
   * Container paths of the mounts whose trees held secret files (now hidden; see `namesSecretFile`).
   * Files next to them may hold secrets under other names, so a run that reads inside one of these
   * mounts is secret-tainted (host/security/secret-reads.ts).
   */
  secretMounts: string[];
  /**
   * Container paths of the mounts (extra or project) whose folders overlap one another group mounts
   * read-write (`foldersOthersWrite`): a run that reads inside one is corrupted, since what another group's
   * runs wrote there is their words (host/security/secret-reads.ts).
   */
  sharedMounts: string[];
}

export interface PlanGroupMountsInput {
  dataDir: string;
  projectRoot: string;
  /** Never mountable; pass it so an allowed root that contains it cannot expose the allowlist or .env. */
  configDir?: string;
  group: { id: string; isAdmin: boolean; extraMounts?: readonly unknown[] };
  allowlistResult: MountAllowlistResult;
  assistantName?: string;
  homeDir?: string;
  /** Kept by a long-lived caller so that unchanged directories of the mounted trees are not read again. */
  walkCache?: ShadowWalkCache;
  /** `walkCache.sync()` taken just before this plan (see shadow-walk-cache.ts); never an older one. */
  walkSync?: WalkSync;
  /** Host folders other groups ask to mount read-write, as configured (`~` allowed; missing ones skipped). */
  foldersOthersWrite?: readonly string[];
}

/**
 * Creates `<dataDir>/<kind>/<id>` if needed and proves it is a real directory at exactly that place: a
 * symlink there (planted by anyone) would hand the container a folder of the attacker's choosing.
 */
function ensureOwnDir(realDataDir: string, kind: 'groups' | 'sessions', id: string): string {
  const dir = path.join(realDataDir, kind, id);
  fs.mkdirSync(dir, { recursive: true });
  const stat = fs.lstatSync(dir);
  if (!stat.isDirectory() || fs.realpathSync.native(dir) !== dir) {
    throw new Error(`${dir} must be a real directory, not a symlink; move it away and retry`);
  }
  return dir;
}

/** A configured folder as the mounts see it (home expanded, symlinks resolved); none when it is missing. */
function realFolder(configured: string, homeDir: string | undefined): string[] {
  const expanded = expandHome(configured, homeDir ?? os.homedir());
  if (!expanded.ok) return [];
  try {
    return [fs.realpathSync.native(expanded.path)];
  } catch {
    return [];
  }
}

/** Writes AGENT.md only when absent; `wx` also refuses to follow a symlink planted under that name. */
function ensureAgentMd(groupDir: string, input: PlanGroupMountsInput): void {
  const file = path.join(groupDir, AGENT_MEMORY_FILE);
  const text = renderAgentMdTemplate({
    groupId: input.group.id,
    isAdmin: input.group.isAdmin,
    assistantName: input.assistantName,
  });
  try {
    fs.writeFileSync(file, text, { flag: 'wx', mode: 0o644 });
  } catch (err) {
    if (!(typeof err === 'object' && err !== null && 'code' in err && err.code === 'EEXIST')) throw err;
  }
}

/**
 * Everything a group's container may see, and nothing else: its own folder and session (rw), the project
 * root read-only for the admin group (with the data and config dirs and top-level secret files hidden), and
 * the extra mounts the allowlist accepts. Throws on an invalid group id or a broken data/project dir;
 * individual extra mounts are rejected with reasons instead.
 */
export function planGroupMounts(input: PlanGroupMountsInput): GroupMountPlan {
  const { group, allowlistResult } = input;
  assertValidGroupId(group.id);

  fs.mkdirSync(input.dataDir, { recursive: true });
  const realDataDir = fs.realpathSync.native(input.dataDir);
  const groupDir = ensureOwnDir(realDataDir, 'groups', group.id);
  const sessionDir = ensureOwnDir(realDataDir, 'sessions', group.id);
  ensureAgentMd(groupDir, input);

  const mounts: Mount[] = [
    { hostPath: groupDir, containerPath: CONTAINER_GROUP_DIR, readOnly: false, kind: 'group' },
    { hostPath: sessionDir, containerPath: CONTAINER_SESSION_DIR, readOnly: false, kind: 'session' },
  ];
  const rejected: RejectedMount[] = [];
  const notes: string[] = [];

  const protectedPaths = [realDataDir];
  if (input.configDir !== undefined) protectedPaths.push(resolveProtectedPath(input.configDir));
  const hide: HiddenPath[] = [{ hostPath: realDataDir, note: 'Carapace data dir (database, all groups)' }];
  if (input.configDir !== undefined) {
    hide.push({ hostPath: resolveProtectedPath(input.configDir), note: 'Carapace config dir' });
  }
  const patterns = allowlistResult.ok ? allowlistResult.allowlist.blockedPatterns : mergeBlockedPatterns([]);
  let sources: ShadowSources | undefined;
  const secretMounts: string[] = [];
  const shadowsFor = (hostDir: string, containerDir: string): { shadows: Mount[]; unhideable: string[] } => {
    sources ??= ensureShadowSources(realDataDir);
    const planned = planShadows({
      hostDir,
      containerDir,
      patterns,
      hide,
      sources,
      cache: input.walkCache,
      synced: input.walkSync,
    });
    if (planned.matchedSecrets) secretMounts.push(containerDir);
    return {
      shadows: planned.shadows.map((s) => ({ ...s, kind: 'shadow' as const })),
      unhideable: planned.unhideable,
    };
  };
  const unhideableReason = (hostDir: string, names: string[]): string =>
    `${hostDir} holds ${names.map((n) => JSON.stringify(n)).join(', ')}, which must be hidden but whose name ` +
    'contains ":", "," or control characters and so cannot be covered inside the container; rename it';

  if (group.isAdmin) {
    let realProject: string;
    try {
      realProject = fs.realpathSync.native(input.projectRoot);
    } catch {
      throw new Error(`project root ${input.projectRoot} does not exist`);
    }
    if (!fs.statSync(realProject).isDirectory())
      throw new Error(`project root ${realProject} is not a directory`);
    for (const p of protectedPaths) {
      // Shadows can hide a protected dir inside the project, not a project that lies inside one.
      if (isWithin(realProject, p))
        throw new Error(`project root ${realProject} lies inside ${p}, which is never mounted`);
    }
    const { shadows, unhideable } = shadowsFor(realProject, CONTAINER_PROJECT_DIR);
    if (unhideable.length > 0) {
      throw new Error(`cannot mount the project root: ${unhideableReason(realProject, unhideable)}`);
    }
    mounts.push({
      hostPath: realProject,
      containerPath: CONTAINER_PROJECT_DIR,
      readOnly: true,
      kind: 'project',
    });
    mounts.push(...shadows);
  }

  const extras = group.extraMounts ?? [];
  if (!allowlistResult.ok) {
    if (extras.length > 0) notes.push(`every extra mount is blocked: ${allowlistResult.reason}`);
  } else {
    for (const root of allowlistResult.allowlist.unusableRoots) {
      notes.push(`allowed root ${root.configuredPath} is unusable: ${root.reason}`);
    }
  }

  const accepted: Mount[] = [];
  for (const request of extras) {
    const result = validateExtraMount(request, {
      allowlistResult,
      isAdmin: group.isAdmin,
      protectedPaths,
      homeDir: input.homeDir,
    });
    if (!result.ok) {
      rejected.push({ request, reason: result.reason });
      continue;
    }
    const { containerPath } = result.mount;
    const clash = accepted.find((m) => overlaps(m.containerPath, containerPath));
    if (clash) {
      rejected.push({
        request,
        reason:
          clash.containerPath === containerPath
            ? `container path ${containerPath} is already used by the mount of ${clash.hostPath}; set a different container_path`
            : `container path ${containerPath} overlaps ${clash.containerPath} (mount of ${clash.hostPath}); nested extra mounts are not allowed`,
      });
      continue;
    }
    const { shadows, unhideable } = shadowsFor(result.mount.hostPath, containerPath);
    if (unhideable.length > 0) {
      rejected.push({ request, reason: unhideableReason(result.mount.hostPath, unhideable) });
      continue;
    }
    const mount: Mount = { ...result.mount, kind: 'extra' };
    if (result.notes.length > 0) mount.note = result.notes.join('; ');
    accepted.push(mount);
    mounts.push(mount, ...shadows);
  }

  const othersWrite = (input.foldersOthersWrite ?? []).flatMap((p) => realFolder(p, input.homeDir));
  const sharedMounts = mounts
    .filter(
      (m) => (m.kind === 'extra' || m.kind === 'project') && othersWrite.some((o) => overlaps(o, m.hostPath)),
    )
    .map((m) => m.containerPath);
  return { groupId: group.id, isAdmin: group.isAdmin, mounts, rejected, notes, secretMounts, sharedMounts };
}
