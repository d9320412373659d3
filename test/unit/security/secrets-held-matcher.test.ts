import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  createHeldSecretMatcher,
  MIN_HELD_SECRET_LENGTH,
  REDACTED,
} from '../../../host/security/secrets/held-matcher.ts';

// Built at run time so that this file never holds anything a secret scanner would flag.
const HELD = ['sk', 'live', randomBytes(16).toString('hex')].join('-');
const WITH_SPECIALS = `tok/en+with="quote"&more?x=${randomBytes(6).toString('hex')}`;

describe('held secret matcher', () => {
  it('finds the secret raw, base64, base64url, url-encoded and json-escaped', () => {
    const m = createHeldSecretMatcher([HELD, WITH_SPECIALS]);
    // A base64url text without "-" or "_" is also valid standard base64, and is labelled so.
    const cases: [string, RegExp][] = [
      [HELD, /^raw$/],
      [Buffer.from(HELD).toString('base64'), /^base64$/],
      [Buffer.from(WITH_SPECIALS).toString('base64url'), /^base64(url)?$/],
      [encodeURIComponent(WITH_SPECIALS), /^url-encoded$/],
      [encodeURIComponent(WITH_SPECIALS).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()), /^url-encoded$/],
      [JSON.stringify(WITH_SPECIALS).slice(1, -1), /^json-escaped$/],
    ];
    for (const [encoded, encoding] of cases) {
      const text = `before ${encoded} after`;
      const found = m.find(text);
      expect(found, encoded).toEqual([
        { start: 7, end: 7 + encoded.length, encoding: expect.stringMatching(encoding) },
      ]);
    }
  });

  it('finds the secret inside a longer base64 blob at every byte alignment, in both alphabets', () => {
    const m = createHeldSecretMatcher([HELD, WITH_SPECIALS]);
    for (const secret of [HELD, WITH_SPECIALS]) {
      for (let prefixLength = 0; prefixLength < 9; prefixLength++) {
        for (const suffixLength of [0, 1, 2, 7]) {
          const blob = Buffer.concat([
            randomBytes(prefixLength),
            Buffer.from(secret),
            randomBytes(suffixLength),
          ]);
          for (const alphabet of ['base64', 'base64url'] as const) {
            const text = `data:${blob.toString(alphabet)}`;
            const found = m.find(text);
            expect(found.length, `${alphabet} prefix ${prefixLength} suffix ${suffixLength}`).toBeGreaterThan(
              0,
            );
            expect(m.redact(text)).toContain(REDACTED);
          }
        }
      }
    }
  });

  it('ignores held values shorter than the minimum and reports nothing in unrelated text', () => {
    const short = 'x'.repeat(MIN_HELD_SECRET_LENGTH - 1);
    const m = createHeldSecretMatcher([short, 'admin', HELD]);
    expect(m.secretCount).toBe(1);
    expect(m.find(`${short} admin ${randomBytes(300).toString('base64')}`)).toEqual([]);
  });

  it('reports one finding per place even when several encodings overlap there', () => {
    const m = createHeldSecretMatcher([HELD]);
    const b64 = Buffer.from(HELD).toString('base64');
    expect(m.find(`${b64} and ${HELD}`)).toEqual([
      { start: 0, end: b64.length, encoding: 'base64' },
      { start: b64.length + 5, end: b64.length + 5 + HELD.length, encoding: 'raw' },
    ]);
  });

  it('redacts every occurrence, merges touching ones, and returns the same string when clean', () => {
    const m = createHeldSecretMatcher([HELD, WITH_SPECIALS]);
    const clean = 'nothing to see here '.repeat(50);
    expect(m.redact(clean)).toBe(clean);
    const text = `a=${HELD}${HELD} b=${encodeURIComponent(WITH_SPECIALS)} c=${Buffer.from(HELD).toString('base64')}`;
    const out = m.redact(text);
    expect(out).toBe(`a=${REDACTED} b=${REDACTED} c=${REDACTED}`);
    expect(out).not.toContain(HELD);
  });

  it('redacts a secret in the JSON of a log line', () => {
    const m = createHeldSecretMatcher([WITH_SPECIALS]);
    const line = JSON.stringify({ msg: 'calling provider', header: `Bearer ${WITH_SPECIALS}` });
    expect(m.redact(line)).toBe(JSON.stringify({ msg: 'calling provider', header: `Bearer ${REDACTED}` }));
  });
});
