/**
 * The admin group sees this project read-only; a file or folder in it named as a secret (`credentials`,
 * `.env`, `id_rsa`, …) would make that view a secret mount, and every admin run that reads it secret-tainted
 * (a folder `host/services/credentials/` once did). Names that merely mention a pattern are fine.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { DEFAULT_BLOCKED_PATTERNS } from '../../../host/containers/mounts/mount-patterns.ts';
import { namesSecretFile } from '../../../host/containers/mounts/mount-shadows.ts';

describe("the project's own file names", () => {
  it('name no file or folder as a secret, so the admin group does not read a secret mount', () => {
    const files = execFileSync('git', ['ls-files'], { encoding: 'utf8' }).trim().split('\n');
    const named = files.filter((file) =>
      file.split('/').some((part) => DEFAULT_BLOCKED_PATTERNS.some((p) => namesSecretFile(part, p))),
    );
    expect(named).toEqual([]);
  });
});
