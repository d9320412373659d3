import { describe, expect, it } from 'vitest';
import {
  defaultBranchOf,
  lsRefsRequest,
  parseLsRefs,
  refsUpdatedBy,
  UNRESOLVED,
} from '../../../host/gateway/credential/git-refs.ts';

const ID = 'a'.repeat(40);
const pkt = (line: string) => `${(line.length + 4).toString(16).padStart(4, '0')}${line}`;
const answer = (...lines: string[]) => Buffer.from(`${lines.map(pkt).join('')}0000`, 'latin1');

describe("a remote's refs by what they point to", () => {
  it('asks ls-refs for every ref with its symbolic target, in pkt-lines', () => {
    expect(lsRefsRequest().toString('latin1')).toBe(
      '0014command=ls-refs\n0001000csymrefs\n0014ref-prefix HEAD\n0015ref-prefix refs/\n0000',
    );
  });

  it('reads the targets of HEAD and of any other symbolic ref, and follows chains', () => {
    const refs = parseLsRefs(
      answer(
        `${ID} HEAD symref-target:refs/heads/main\n`,
        `${ID} refs/heads/main\n`,
        `${ID} refs/heads/master symref-target:refs/heads/main\n`,
        `${ID} refs/heads/trunk symref-target:refs/heads/master\n`,
        `unborn refs/heads/empty symref-target:refs/heads/none\n`,
        `${ID} refs/tags/v1 peeled:${'b'.repeat(40)}\n`,
      ),
    );
    expect(defaultBranchOf(refs)).toBe('refs/heads/main');
    expect(refsUpdatedBy('refs/heads/trunk', refs)).toEqual([
      'refs/heads/trunk',
      'refs/heads/master',
      'refs/heads/main',
    ]);
    expect(refsUpdatedBy('refs/heads/feature', refs)).toEqual(['refs/heads/feature']);
    expect(refsUpdatedBy('refs/tags/v1', refs)).toEqual(['refs/tags/v1']);
  });

  it('marks a loop or a chain deeper than git follows as unresolved, which counts as protected', () => {
    const loop = parseLsRefs(
      answer(
        `${ID} refs/heads/a symref-target:refs/heads/b\n`,
        `${ID} refs/heads/b symref-target:refs/heads/a\n`,
      ),
    );
    expect(refsUpdatedBy('refs/heads/a', loop)).toEqual(['refs/heads/a', 'refs/heads/b', UNRESOLVED]);
    const deep = parseLsRefs(
      answer(
        ...Array.from({ length: 7 }, (_, i) => `${ID} refs/heads/r${i} symref-target:refs/heads/r${i + 1}\n`),
      ),
    );
    expect(refsUpdatedBy('refs/heads/r0', deep).at(-1)).toBe(UNRESOLVED);
  });

  it('refuses an answer that is not ls-refs output', () => {
    expect(() => parseLsRefs(Buffer.from('# service=git-upload-pack\n'))).toThrow();
    expect(() => parseLsRefs(answer('ERR access denied\n'))).toThrow(/not an ls-refs line/);
    expect(() => parseLsRefs(Buffer.from(pkt(`${ID} refs/heads/main\n`)))).toThrow(/flush/);
  });
});
