import { parseAllowRule, type AllowRule } from './credential-config.ts';

/**
 * The allowlist of an http credential. The pattern language is small on purpose, so a pattern means what
 * it looks like: `*` is any text within one path segment, `**` any number of whole segments, everything
 * else literal. (A glob library's braces, classes and extglobs would let one pattern allow more than a
 * glance at it says.)
 */

function segmentMatches(pattern: string, segment: string): boolean {
  if (!pattern.includes('*')) return pattern === segment;
  const source = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/]*');
  return new RegExp(`^${source}$`).test(segment);
}

function segmentsMatch(pattern: readonly string[], path: readonly string[]): boolean {
  if (pattern.length === 0) return path.length === 0;
  const [head, ...rest] = pattern;
  if (head === '**') {
    for (let skip = 0; skip <= path.length; skip++) if (segmentsMatch(rest, path.slice(skip))) return true;
    return false;
  }
  return path.length > 0 && segmentMatches(head ?? '', path[0] ?? '') && segmentsMatch(rest, path.slice(1));
}

/**
 * Why a request path cannot be judged, or undefined when it can. Anything an upstream might read as
 * another path than the one matched is refused: dot segments, empty segments, backslashes and escaped
 * dots, slashes or backslashes.
 */
export function unsafePathReason(path: string): string | undefined {
  if (!path.startsWith('/')) return 'the path must start with "/"';
  if (path.includes('\\')) return 'the path contains a backslash';
  if (/%(2e|2f|5c|00)/i.test(path)) return 'the path contains an escaped ".", "/", "\\" or NUL';
  const segments = path.split('/').slice(1);
  if (segments.some((s, i) => s === '.' || s === '..' || (s === '' && i < segments.length - 1)))
    return 'the path contains ".", ".." or an empty segment';
  return undefined;
}

export function parseAllowRules(texts: readonly string[]): AllowRule[] {
  // The schema refused unparseable rules at load; one that slips through allows nothing.
  return texts.map(parseAllowRule).filter((r): r is AllowRule => typeof r !== 'string');
}

/** Whether `method path` is on the allowlist. A path that unsafePathReason refuses never is. */
export function isAllowed(rules: readonly AllowRule[], method: string, path: string): boolean {
  if (unsafePathReason(path) !== undefined) return false;
  const segments = path.split('/').slice(1);
  return rules.some(
    (rule) =>
      (rule.methods as readonly string[]).includes(method) &&
      segmentsMatch(rule.path.split('/').slice(1), segments),
  );
}
