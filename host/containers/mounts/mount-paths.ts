import path from 'node:path';

export type ExpandResult = { ok: true; path: string } | { ok: false; reason: string };

/**
 * Expands a leading `~` or `~/` to homeDir. `~user` is refused rather than guessed, and the result must be
 * absolute: a relative path in a config file has no trustworthy base directory.
 */
export function expandHome(p: string, homeDir: string): ExpandResult {
  let expanded = p;
  if (p === '~') expanded = homeDir;
  else if (p.startsWith('~/')) expanded = path.join(homeDir, p.slice(2));
  else if (p.startsWith('~')) {
    return { ok: false, reason: `"${p}" uses ~user, which is not supported; write the full path or ~/...` };
  }
  if (!path.isAbsolute(expanded)) {
    return { ok: false, reason: `"${p}" is relative; write an absolute path or one starting with ~/` };
  }
  return { ok: true, path: expanded };
}

/** True when child is parent or lies inside it, compared component by component (`/a/bc` is not in `/a/b`). */
export function isWithin(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  if (rel === '') return true;
  if (path.isAbsolute(rel)) return false;
  return rel.split(path.sep)[0] !== '..';
}

/** True when either path contains the other. */
export function overlaps(a: string, b: string): boolean {
  return isWithin(a, b) || isWithin(b, a);
}

/** Path components as written, so that `..` is seen before any normalisation removes it. */
export function rawComponents(p: string): string[] {
  return p.split('/').filter((c) => c !== '' && c !== '.');
}
