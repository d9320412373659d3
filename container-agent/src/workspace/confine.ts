/**
 * Confines the file tools to the workspace. A path is refused when it names a ".." segment, leaves the
 * workspace lexically, or resolves (through symlinks, including dangling ones) to somewhere outside it.
 * The container is the real sandbox; this keeps the model's file tools from wandering out of the
 * mounted folders into the image (or, if misconfigured, the host's files).
 */
import fs from 'node:fs/promises';
import path from 'node:path';

export class PathRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PathRefusedError';
  }
}

export interface ResolveOptions {
  /** Allow a path whose last components do not exist yet (for writing). */
  allowMissing?: boolean;
}

export interface Workspace {
  /** The workspace root as configured. */
  readonly root: string;
  /** The directory relative paths start from (the group folder). */
  readonly cwd: string;
  /** The real (symlink-free) absolute path inside the workspace, or a PathRefusedError. */
  resolve(userPath: string, options?: ResolveOptions): Promise<string>;
  /** A real path shown to the model: relative to cwd when inside it, else absolute. */
  display(realPath: string): string;
}

export function createWorkspace(options: { root: string; cwd: string }): Workspace {
  const root = path.resolve(options.root);
  const cwd = path.resolve(root, options.cwd);
  let realRootPromise: Promise<string> | undefined;
  let realCwd: string | undefined;
  const realRoot = (): Promise<string> => {
    realRootPromise ??= fs.realpath(root).then(async (real) => {
      realCwd = await fs.realpath(cwd).catch(() => cwd);
      return real;
    });
    return realRootPromise;
  };

  const refuse = (userPath: string, why: string): never => {
    throw new PathRefusedError(`refused path "${userPath}": ${why}; use a path inside ${root}`);
  };

  return {
    root,
    cwd,
    async resolve(userPath, resolveOptions = {}) {
      if (userPath.includes('\0')) refuse(userPath, 'it contains a NUL byte');
      if (userPath.trim() === '') refuse(userPath, 'it is empty');
      if (userPath.split(/[\\/]+/).includes('..')) refuse(userPath, '".." is not allowed');
      const absolute = path.resolve(cwd, userPath);
      if (!isInside(root, absolute)) refuse(userPath, 'it is outside the workspace');
      const base = await realRoot();

      // Walk up to the deepest existing ancestor, then check where it really is.
      const missing: string[] = [];
      let probe = absolute;
      for (;;) {
        let real: string | undefined;
        try {
          real = await fs.realpath(probe);
        } catch (error) {
          if (!isErrno(error, 'ENOENT')) throw error;
        }
        if (real !== undefined) {
          if (!isInside(base, real)) refuse(userPath, 'it leads outside the workspace through a symlink');
          if (missing.length > 0 && !resolveOptions.allowMissing) {
            throw new PathRefusedError(`"${userPath}" does not exist`);
          }
          return path.join(real, ...missing);
        }
        // realpath fails on a missing path and on a dangling symlink; only the first may be created.
        const isLink = await fs.lstat(probe).then(
          (stat) => stat.isSymbolicLink(),
          () => false,
        );
        if (isLink) refuse(userPath, 'it goes through a symlink whose target does not exist');
        missing.unshift(path.basename(probe));
        const parent = path.dirname(probe);
        if (parent === probe || !isInside(root, parent)) refuse(userPath, 'the workspace does not exist');
        probe = parent;
      }
    },
    display(realPath) {
      const from = realCwd ?? cwd;
      if (isInside(from, realPath)) return path.relative(from, realPath) || '.';
      return realPath;
    },
  };
}

export function isInside(parent: string, child: string): boolean {
  const relative = path.relative(parent, child);
  if (relative === '') return true;
  if (relative === '..' || relative.startsWith(`..${path.sep}`)) return false;
  return !path.isAbsolute(relative);
}

function isErrno(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}
