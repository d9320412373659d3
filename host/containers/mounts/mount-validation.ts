import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import type { AllowedRoot, MountAllowlistResult } from './mount-allowlist.ts';
import { findBlockedComponent } from './mount-patterns.ts';
import { expandHome, isWithin, overlaps, rawComponents } from './mount-paths.ts';
import { describeZodIssues } from '../../../container-agent/src/rpc/zod-issues.ts';
import { errorCode } from '../../errors/error-code.ts';

export const EXTRA_MOUNT_BASE = '/workspace/extra';

/** One entry of a group's `extra_mounts` in config. */
export const extraMountRequestSchema = z
  .object({
    host_path: z.string().min(1),
    container_path: z.string().optional(),
    read_write: z.boolean().default(false),
  })
  .strict();

export interface ValidatedMount {
  hostPath: string;
  containerPath: string;
  readOnly: boolean;
}

export type ExtraMountValidation =
  { ok: true; mount: ValidatedMount; notes: string[] } | { ok: false; reason: string };

export interface ExtraMountContext {
  allowlistResult: MountAllowlistResult;
  isAdmin: boolean;
  /**
   * Host paths an extra mount may not be, lie inside, or contain (the data dir with the database and every
   * group's folders, the config dir with the allowlist and secrets).
   */
  protectedPaths?: readonly string[];
  homeDir?: string;
}

const CONTAINER_NAME_CHARS = /^[A-Za-z0-9._\-/]+$/;
// eslint-disable-next-line no-control-regex
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;
const MAX_CONTAINER_PATH = 255;

export type ContainerPathResult = { ok: true; containerPath: string } | { ok: false; reason: string };

/** `name` relative to /workspace/extra: non-empty, only [A-Za-z0-9._-] and '/', no '.', '..' or empty parts. */
export function validateContainerPath(name: string): ContainerPathResult {
  const shown = JSON.stringify(name);
  if (name === '') return { ok: false, reason: 'container_path is empty; use a name such as "docs"' };
  if (name.startsWith('/')) {
    return {
      ok: false,
      reason: `container_path ${shown} is absolute; give a name relative to ${EXTRA_MOUNT_BASE}, e.g. "docs"`,
    };
  }
  if (CONTROL_CHARS.test(name))
    return { ok: false, reason: `container_path ${shown} contains control characters` };
  const parts = name.split('/');
  if (parts.includes('..'))
    return {
      ok: false,
      reason: `container_path ${shown} contains "..", which could escape ${EXTRA_MOUNT_BASE}`,
    };
  if (!CONTAINER_NAME_CHARS.test(name)) {
    return {
      ok: false,
      reason: `container_path ${shown} may only use letters, digits, ".", "_", "-" and "/"`,
    };
  }
  if (parts.some((p) => p === '' || p === '.')) {
    return {
      ok: false,
      reason: `container_path ${shown} has an empty or "." part; write it like "docs/2024"`,
    };
  }
  if (name.length > MAX_CONTAINER_PATH) {
    return { ok: false, reason: `container_path is longer than ${MAX_CONTAINER_PATH} characters` };
  }
  return { ok: true, containerPath: `${EXTRA_MOUNT_BASE}/${name}` };
}

/** Resolves through symlinks when the path exists, so protection also holds for a symlinked data dir. */
export function resolveProtectedPath(p: string): string {
  try {
    return fs.realpathSync.native(p);
  } catch {
    return path.resolve(p);
  }
}

function deepestRoot(roots: readonly AllowedRoot[], real: string): AllowedRoot | undefined {
  let best: AllowedRoot | undefined;
  for (const root of roots) {
    if (isWithin(real, root.path) && (best === undefined || root.path.length > best.path.length)) best = root;
  }
  return best;
}

/**
 * Decides one extra mount. Fails closed: anything not positively allowed (including a missing or invalid
 * allowlist) is rejected with a reason the owner can act on. Read-write only when the request asks for it,
 * the deepest root containing the path allows it, and the group is admin or non_admin_read_only is off.
 */
export function validateExtraMount(request: unknown, ctx: ExtraMountContext): ExtraMountValidation {
  const reject = (reason: string): ExtraMountValidation => ({ ok: false, reason });
  const parsed = extraMountRequestSchema.safeParse(request);
  if (!parsed.success) {
    return reject(
      `invalid mount request: ${describeZodIssues(parsed.error, 1)} ` +
        '(e.g. { host_path = "~/projects/app", container_path = "app", read_write = false })',
    );
  }
  const req = parsed.data;
  if (!ctx.allowlistResult.ok) return reject(`extra mounts are blocked: ${ctx.allowlistResult.reason}`);
  const allowlist = ctx.allowlistResult.allowlist;
  const patterns = allowlist.blockedPatterns;
  const shown = JSON.stringify(req.host_path);

  if (CONTROL_CHARS.test(req.host_path)) return reject(`host_path ${shown} contains control characters`);
  // Checked on the text as written: expanding `~` normalises the path and would hide the `..`.
  if (rawComponents(req.host_path).includes('..')) {
    return reject(`host_path ${shown} contains ".."; write the path without it`);
  }
  const expanded = expandHome(req.host_path, ctx.homeDir ?? os.homedir());
  if (!expanded.ok) return reject(`host_path ${expanded.reason}`);
  const writtenBlock = findBlockedComponent(expanded.path, patterns);
  if (writtenBlock) {
    return reject(
      `host_path ${shown} is blocked: "${writtenBlock.component}" matches blocked pattern "${writtenBlock.pattern}"`,
    );
  }

  let real: string;
  try {
    real = fs.realpathSync.native(expanded.path);
  } catch (err) {
    const code = errorCode(err);
    return reject(
      `host_path ${shown} ${code === 'ENOENT' ? 'does not exist' : `cannot be resolved (${code ?? String(err)})`}`,
    );
  }
  const via = real === expanded.path ? '' : ` (resolves to ${real})`;
  // Every check below looks at the resolved path only: a symlink inside a root may point anywhere.
  let stat: fs.Stats;
  try {
    stat = fs.statSync(real);
  } catch (err) {
    return reject(`host_path ${shown}${via} cannot be read (${errorCode(err) ?? String(err)})`);
  }
  if (!stat.isDirectory() && !stat.isFile()) {
    return reject(
      `host_path ${shown}${via} is neither a directory nor a regular file (sockets and devices are never mounted)`,
    );
  }
  if (CONTROL_CHARS.test(real) || real.includes(':')) {
    return reject(
      `host_path ${shown}${via} contains ":" or control characters, which mount specs cannot carry safely`,
    );
  }
  const realBlock = findBlockedComponent(real, patterns);
  if (realBlock) {
    return reject(
      `host_path ${shown}${via} is blocked: "${realBlock.component}" matches blocked pattern "${realBlock.pattern}"`,
    );
  }

  const root = deepestRoot(allowlist.roots, real);
  if (!root) {
    const roots = allowlist.roots.map((r) => r.path).join(', ');
    return reject(
      `host_path ${shown}${via} is not under any allowed root ` +
        (roots === '' ? `(${allowlist.file} has no usable allowed_roots)` : `(allowed: ${roots})`),
    );
  }

  for (const protectedPath of ctx.protectedPaths ?? []) {
    const resolved = resolveProtectedPath(protectedPath);
    if (overlaps(real, resolved)) {
      return reject(
        `host_path ${shown}${via} overlaps ${resolved}, which holds Carapace's own state (database, groups, config) and is never mounted`,
      );
    }
  }

  const name = req.container_path ?? path.basename(expanded.path);
  const container = validateContainerPath(name);
  if (!container.ok) {
    const hint =
      req.container_path === undefined ? ' (derived from the host path; set container_path explicitly)' : '';
    return reject(`${container.reason}${hint}`);
  }

  const notes: string[] = [];
  let readOnly = true;
  if (req.read_write) {
    if (!root.allowReadWrite) {
      notes.push(
        `read-write requested, but allowed root ${root.configuredPath} does not set allow_read_write`,
      );
    } else if (!ctx.isAdmin && allowlist.nonAdminReadOnly) {
      notes.push(
        'read-write requested, but non_admin_read_only = true and this group is not the admin group',
      );
    } else {
      readOnly = false;
    }
  }
  return { ok: true, mount: { hostPath: real, containerPath: container.containerPath, readOnly }, notes };
}
