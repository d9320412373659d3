import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse as parseToml, TomlError } from 'smol-toml';
import { z } from 'zod';
import { findBlockedComponent, mergeBlockedPatterns } from './mount-patterns.ts';
import { expandHome } from './mount-paths.ts';
import { errorCode } from '../../errors/error-code.ts';
import { zodProblems, type ZodProblem } from '../../../container-agent/src/rpc/zod-issues.ts';

export const MOUNT_ALLOWLIST_FILE = 'mount-allowlist.toml';

const allowedRootSchema = z
  .object({
    path: z
      .string()
      .min(1)
      .refine((p) => p.startsWith('/') || p === '~' || p.startsWith('~/'), {
        message: 'must be an absolute path or start with ~/',
      }),
    allow_read_write: z.boolean().default(false),
    description: z.string().optional(),
  })
  .strict();

/** The file's schema. An empty file is valid and allows nothing. */
export const mountAllowlistFileSchema = z
  .object({
    allowed_roots: z.array(allowedRootSchema).default([]),
    blocked_patterns: z
      .array(
        z
          .string()
          .min(1)
          .refine((p) => !p.includes('/') && !p.includes('\0'), {
            message: 'a pattern matches one path component, so it cannot contain "/"',
          }),
      )
      .default([]),
    non_admin_read_only: z.boolean().default(true),
  })
  .strict();

export type MountAllowlistFile = z.infer<typeof mountAllowlistFileSchema>;

export interface AllowedRoot {
  /** As written in the file, for messages. */
  configuredPath: string;
  /** Resolved through symlinks; every check compares against this. */
  path: string;
  allowReadWrite: boolean;
  description?: string;
}

export interface UnusableRoot {
  configuredPath: string;
  reason: string;
}

export interface MountAllowlist {
  file: string;
  roots: AllowedRoot[];
  /** Roots left out at load time; nothing can be mounted through them, the other roots still work. */
  unusableRoots: UnusableRoot[];
  /** Defaults merged with the file's patterns. */
  blockedPatterns: string[];
  nonAdminReadOnly: boolean;
}

export type MountAllowlistResult =
  { ok: true; allowlist: MountAllowlist } | { ok: false; file: string; reason: string };

export interface LoadMountAllowlistOptions {
  homeDir?: string;
}

const EXAMPLES: Record<string, string> = {
  allowed_roots: 'allowed_roots = [{ path = "~/projects", allow_read_write = false, description = "code" }]',
  path: 'path = "~/projects"',
  allow_read_write: 'allow_read_write = true',
  description: 'description = "shared documents"',
  blocked_patterns: 'blocked_patterns = ["*.pem", "secrets"]',
  non_admin_read_only: 'non_admin_read_only = true',
};

const TOP_LEVEL_KEYS = ['allowed_roots', 'blocked_patterns', 'non_admin_read_only'];
const ROOT_KEYS = ['path', 'allow_read_write', 'description'];

/** The project's one zod reading, with this file's allowed keys and an example line to copy added. */
function describeProblem(p: ZodProblem): string {
  if (p.unknownKey !== undefined) {
    const insideRoot = p.path.length > 1;
    const allowed = insideRoot ? ROOT_KEYS : TOP_LEVEL_KEYS;
    const example = insideRoot ? EXAMPLES.allowed_roots : EXAMPLES.non_admin_read_only;
    // The usual cause: a top-level key written after a [[allowed_roots]] header, which TOML files under it.
    const misplaced =
      insideRoot && TOP_LEVEL_KEYS.includes(p.unknownKey)
        ? '; top-level keys must come before the first [[allowed_roots]]'
        : '';
    return `${p.problem}; allowed keys are ${allowed.join(', ')}${misplaced} (e.g. ${example})`;
  }
  const key = p.path.findLast((part): part is string => typeof part === 'string');
  const example = key === undefined ? undefined : EXAMPLES[key];
  return `${p.where || '(top level)'}: ${p.problem}${example === undefined ? '' : ` (e.g. ${example})`}`;
}

function resolveRoot(
  root: MountAllowlistFile['allowed_roots'][number],
  homeDir: string,
  patterns: readonly string[],
): AllowedRoot | UnusableRoot {
  const configuredPath = root.path;
  const expanded = expandHome(root.path, homeDir);
  if (!expanded.ok) return { configuredPath, reason: expanded.reason };
  let real: string;
  try {
    real = fs.realpathSync.native(expanded.path);
  } catch (err) {
    const code = errorCode(err);
    return {
      configuredPath,
      reason: code === 'ENOENT' ? 'does not exist' : `cannot be resolved (${code ?? String(err)})`,
    };
  }
  if (!fs.statSync(real).isDirectory()) return { configuredPath, reason: `${real} is not a directory` };
  if (real === path.parse(real).root) {
    return { configuredPath, reason: 'is the whole file system; name a narrower directory' };
  }
  // A root inside e.g. ~/.ssh would let nothing through anyway; saying so at load time is clearer.
  const blocked = findBlockedComponent(real, patterns) ?? findBlockedComponent(expanded.path, patterns);
  if (blocked) {
    return {
      configuredPath,
      reason: `path component "${blocked.component}" matches blocked pattern "${blocked.pattern}"`,
    };
  }
  const resolved: AllowedRoot = { configuredPath, path: real, allowReadWrite: root.allow_read_write };
  if (root.description !== undefined) resolved.description = root.description;
  return resolved;
}

/**
 * Reads `<configDir>/mount-allowlist.toml`. A missing, unreadable, world-writable or invalid file gives
 * `ok: false` (and so blocks every extra mount). A root that does not exist, is not a directory, is `/`, or
 * sits under a blocked name is listed in `unusableRoots` and skipped; the rest of the file stays in force,
 * so an unplugged disk does not take every other mount down with it.
 */
export function loadMountAllowlist(
  configDir: string,
  options: LoadMountAllowlistOptions = {},
): MountAllowlistResult {
  const homeDir = options.homeDir ?? os.homedir();
  const file = path.join(configDir, MOUNT_ALLOWLIST_FILE);
  const fail = (reason: string): MountAllowlistResult => ({ ok: false, file, reason: `${file}: ${reason}` });

  let text: string;
  try {
    const stat = fs.statSync(file);
    if (!stat.isFile()) return fail('is not a regular file');
    // Anyone who can write this file can widen what containers see.
    if ((stat.mode & 0o002) !== 0) return fail(`is world-writable; fix with: chmod o-w ${file}`);
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') {
      return fail(
        'does not exist, so every extra mount is blocked. Create it, e.g. with ' +
          '[[allowed_roots]] path = "~/projects" allow_read_write = false ' +
          '(see config/mount-allowlist.example.toml)',
      );
    }
    return fail(`cannot be read (${errorCode(err) ?? String(err)})`);
  }

  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (err) {
    if (err instanceof TomlError)
      return fail(
        `is not valid TOML at line ${err.line}, column ${err.column}: ${err.message.split('\n')[0]}`,
      );
    return fail(`is not valid TOML: ${String(err)}`);
  }

  const parsed = mountAllowlistFileSchema.safeParse(raw);
  if (!parsed.success) return fail(zodProblems(parsed.error).map(describeProblem).join('; '));

  const blockedPatterns = mergeBlockedPatterns(parsed.data.blocked_patterns);
  const roots: AllowedRoot[] = [];
  const unusableRoots: UnusableRoot[] = [];
  for (const root of parsed.data.allowed_roots) {
    const resolved = resolveRoot(root, homeDir, blockedPatterns);
    if ('reason' in resolved) unusableRoots.push(resolved);
    else roots.push(resolved);
  }
  return {
    ok: true,
    allowlist: {
      file,
      roots,
      unusableRoots,
      blockedPatterns,
      nonAdminReadOnly: parsed.data.non_admin_read_only,
    },
  };
}
