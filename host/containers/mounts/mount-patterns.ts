// Blocked patterns: names that mark credentials and keys, matched against every component of a host path.
//
// Matching rules (case-insensitive, always one path component at a time, never across a '/'):
// - a pattern with `*` or `?` is a glob over the whole component: `*.pem` matches `server.pem`,
//   `id_rsa*` matches `id_rsa.pub`; `*` matches any run of characters, `?` exactly one;
// - any other pattern matches a component that CONTAINS it: `.env` blocks `.env`, `.env.local` and
//   `prod.env`; `credentials` blocks `aws-credentials.json`.
// Substring matching blocks some harmless names (`.envrc`, `.dockerignore`); for a security filter a false
// block the owner can see and fix by renaming is cheaper than a missed secret. Case-insensitive because
// macOS file systems are, so `.SSH` opens `.ssh` there.

export const DEFAULT_BLOCKED_PATTERNS: readonly string[] = Object.freeze([
  '.ssh',
  '.gnupg',
  '.gpg',
  '.aws',
  '.azure',
  '.gcloud',
  '.kube',
  '.docker',
  'credentials',
  '.env',
  '.netrc',
  '.npmrc',
  '.pypirc',
  'id_rsa',
  'id_ed25519',
  'private_key',
  '.secret',
]);

/** Defaults first, then the configured patterns; duplicates (case-insensitive) dropped. */
export function mergeBlockedPatterns(configured: readonly string[]): string[] {
  const seen = new Set<string>();
  const merged: string[] = [];
  for (const pattern of [...DEFAULT_BLOCKED_PATTERNS, ...configured]) {
    const key = pattern.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    merged.push(pattern);
  }
  return merged;
}

function isGlob(pattern: string): boolean {
  return pattern.includes('*') || pattern.includes('?');
}

function globToRegExp(pattern: string): RegExp {
  let source = '';
  for (const ch of pattern) {
    if (ch === '*') source += '.*';
    else if (ch === '?') source += '.';
    else source += ch.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
  }
  // `s` so that `*` also spans characters such as a newline inside a hostile file name.
  return new RegExp(`^${source}$`, 'is');
}

/** The first pattern that blocks this single path component, or undefined. */
export function matchBlockedComponent(component: string, patterns: readonly string[]): string | undefined {
  const lower = component.toLowerCase();
  for (const pattern of patterns) {
    if (isGlob(pattern)) {
      if (globToRegExp(pattern).test(component)) return pattern;
    } else if (lower.includes(pattern.toLowerCase())) {
      return pattern;
    }
  }
  return undefined;
}

export interface BlockedComponent {
  component: string;
  pattern: string;
}

/** The first component of an absolute or relative path that a pattern blocks, or undefined. */
export function findBlockedComponent(p: string, patterns: readonly string[]): BlockedComponent | undefined {
  for (const component of p.split('/')) {
    if (component === '' || component === '.' || component === '..') continue;
    const pattern = matchBlockedComponent(component, patterns);
    if (pattern !== undefined) return { component, pattern };
  }
  return undefined;
}
