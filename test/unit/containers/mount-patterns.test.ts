import { describe, expect, it } from 'vitest';
import {
  DEFAULT_BLOCKED_PATTERNS,
  findBlockedComponent,
  matchBlockedComponent,
  mergeBlockedPatterns,
} from '../../../host/containers/mounts/mount-patterns.ts';
import { expandHome, isWithin } from '../../../host/containers/mounts/mount-paths.ts';

describe('blocked patterns', () => {
  const patterns = mergeBlockedPatterns(['*.pem', 'id_rsa*']);

  it('keeps every default and adds configured ones once', () => {
    for (const p of DEFAULT_BLOCKED_PATTERNS) expect(patterns).toContain(p);
    expect(
      mergeBlockedPatterns(['.SSH', '*.pem', '*.pem']).filter((p) => p.toLowerCase() === '.ssh'),
    ).toHaveLength(1);
    expect(mergeBlockedPatterns(['*.pem', '*.pem']).filter((p) => p === '*.pem')).toHaveLength(1);
  });

  it('blocks a component that contains a plain pattern, case-insensitively', () => {
    expect(matchBlockedComponent('.ssh', patterns)).toBe('.ssh');
    expect(matchBlockedComponent('.SSH', patterns)).toBe('.ssh');
    expect(matchBlockedComponent('.env.local', patterns)).toBe('.env');
    expect(matchBlockedComponent('prod.env', patterns)).toBe('.env');
    expect(matchBlockedComponent('aws-credentials.json', patterns)).toBe('credentials');
    expect(matchBlockedComponent('docs', patterns)).toBeUndefined();
    expect(matchBlockedComponent('ssh', patterns)).toBeUndefined();
  });

  it('treats * and ? as a glob over the whole component', () => {
    expect(matchBlockedComponent('server.pem', patterns)).toBe('*.pem');
    expect(matchBlockedComponent('server.pem.txt', patterns)).toBeUndefined();
    expect(matchBlockedComponent('ID_RSA_work', patterns)).toBe('id_rsa');
    expect(matchBlockedComponent('a.b', ['a?b'])).toBe('a?b');
    expect(matchBlockedComponent('a+b', ['a.b'])).toBeUndefined();
  });

  it('finds a blocked component anywhere in a path but never across a slash', () => {
    expect(findBlockedComponent('/home/u/projects/.aws/config', patterns)).toEqual({
      component: '.aws',
      pattern: '.aws',
    });
    expect(findBlockedComponent('/home/u/projects/app', patterns)).toBeUndefined();
    expect(findBlockedComponent('/x/a/b', ['a/b'])).toBeUndefined();
  });
});

describe('path helpers', () => {
  it('compares containment component by component', () => {
    expect(isWithin('/data/foo', '/data/fo')).toBe(false);
    expect(isWithin('/data/fo', '/data/fo')).toBe(true);
    expect(isWithin('/data/fo/x', '/data/fo')).toBe(true);
    expect(isWithin('/data', '/data/fo')).toBe(false);
    expect(isWithin('/data/fo/..x', '/data/fo')).toBe(true);
  });

  it('expands ~ and refuses ~user and relative paths', () => {
    expect(expandHome('~', '/home/u')).toEqual({ ok: true, path: '/home/u' });
    expect(expandHome('~/a', '/home/u')).toEqual({ ok: true, path: '/home/u/a' });
    expect(expandHome('~bob/a', '/home/u').ok).toBe(false);
    expect(expandHome('a/b', '/home/u').ok).toBe(false);
  });
});
