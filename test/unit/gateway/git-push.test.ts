/**
 * What a push's approval shows beyond its hashes, read from packs the real git builds: whole commits
 * (message, author, date), the files whose content the pack carries as far as the pack names them, and a
 * summary cut to a budget so the question stays askable.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parsePush, summarizePush } from '../../../host/gateway/credential/git-push.ts';
import { makeTempDir, removeTempDir } from '../../helpers/temp-dir.ts';

let dir: string;
const git = (...args: string[]) =>
  execFileSync('git', args, {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: dir,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 'Family bot',
      GIT_AUTHOR_EMAIL: 'bot@example.com',
      GIT_AUTHOR_DATE: '2026-11-27T08:00:00Z',
      GIT_COMMITTER_NAME: 'Family bot',
      GIT_COMMITTER_EMAIL: 'bot@example.com',
    },
  });
const write = (file: string, text: string) => {
  fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
  fs.writeFileSync(path.join(dir, file), text);
};
const commit = (message: string) => {
  git('add', '-A');
  git('commit', '-q', '-m', message);
  return git('rev-parse', 'HEAD').toString().trim();
};
const pktLine = (s: string) => `${(s.length + 4).toString(16).padStart(4, '0')}${s}`;

/** The body `git push` sends: the ref update, a flush, and the thin pack of what the remote lacks. */
function pushBody(from: string, to: string): Buffer {
  const pack = execFileSync('git', ['pack-objects', '--thin', '--stdout', '--revs', '-q'], {
    cwd: dir,
    input: from === '0'.repeat(40) ? `${to}\n` : `${to}\n^${from}\n`,
  });
  return Buffer.concat([
    Buffer.from(`${pktLine(`${from} ${to} refs/heads/main\0 report-status\n`)}0000`),
    pack,
  ]);
}

beforeEach(() => {
  dir = makeTempDir();
  git('init', '-q', '-b', 'main');
});
afterEach(() => removeTempDir(dir));

describe('a push’s commits and files', () => {
  it('reads a first push whole: every commit with its author and message, every file with its path', () => {
    write('pancakes.md', '# Pancakes\n');
    write('sweet/waffles.md', '# Waffles\n');
    const first = commit('first recipes\n\nTwo of them.');
    write('sweet/crepes.md', '# Crêpes\n');
    const second = commit('add crêpes');
    const push = parsePush(pushBody('0'.repeat(40), second));
    expect(push.commits.map((c) => [c.id, c.author, c.date, c.message])).toEqual([
      [second, 'Family bot <bot@example.com>', '2026-11-27T08:00:00.000Z', 'add crêpes'],
      [first, 'Family bot <bot@example.com>', '2026-11-27T08:00:00.000Z', 'first recipes\n\nTwo of them.'],
    ]);
    expect(push.files).toEqual(['pancakes.md', 'sweet/crepes.md', 'sweet/waffles.md']);
    expect(push.unnamed).toBe(0);
  });

  it('names a file a folder’s delta adds, and counts the changed file whose name only the remote’s copy holds', () => {
    for (let i = 0; i < 6; i++)
      write(`src/f${i}.txt`, `${Array.from({ length: 200 }, (_, n) => n).join('\n')}\n`);
    write('README', 'hi\n');
    const before = commit('one');
    fs.appendFileSync(path.join(dir, 'src/f2.txt'), 'changed\n');
    write('src/new.txt', 'new\n');
    const after = commit('two: change f2, add new');
    const push = parsePush(pushBody(before, after));
    expect(push.commits.map((c) => c.message)).toEqual(['two: change f2, add new']);
    // src's tree is a delta against the remote's: its folder is unknown, and f2's name is not in the push.
    expect(push.files).toEqual(['…/new.txt']);
    expect(push.unnamed).toBeGreaterThan(0);
    expect(summarizePush(push).filesNotNamed).toMatch(
      /^\d+ more changed objects were sent as a delta .*, so the push does not name their files$/,
    );
  });

  it('cuts the summary to its budget and counts what it left out, so the approval text can still show it whole', () => {
    let last = '';
    for (let i = 0; i < 40; i++) {
      write(`notes/n${i}.md`, `note ${i}\n`);
      last = commit(`note ${i}: ${'why '.repeat(100)}`);
    }
    const push = parsePush(pushBody('0'.repeat(40), last));
    expect(push.commits).toHaveLength(40);
    const summary = summarizePush(push);
    expect(JSON.stringify(summary, null, 2).length).toBeLessThanOrEqual(1600);
    expect(summary.commits[0]?.message).toMatch(/^note 39: why .*… \(\d+ more characters\)$/);
    expect(summary.commits.length + (summary.commitsNotShown ?? 0)).toBe(40);
    expect(summary.files.length + (summary.filesNotShown ?? 0)).toBe(40);
  });
});
