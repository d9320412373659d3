import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { createSwap } from '../../../host/backup/restore-swap.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs('carapace-swap-');

it('never moves onto something in the way: a rename would replace a file there without a word', () => {
  const dir = tempDir();
  fs.writeFileSync(path.join(dir, 'restored'), 'new\n');
  fs.writeFileSync(path.join(dir, 'current'), 'old\n');
  const swap = createSwap();
  expect(() => swap.move(path.join(dir, 'restored'), path.join(dir, 'current'))).toThrow(/is in the way/);
  expect(fs.readFileSync(path.join(dir, 'current'), 'utf8')).toBe('old\n');
});

it('takes back moves and folders it made, newest first, and says which it could not', () => {
  const dir = tempDir();
  fs.writeFileSync(path.join(dir, 'a'), 'a\n');
  fs.writeFileSync(path.join(dir, 'b'), 'b\n');
  const swap = createSwap();
  swap.mkdir(path.join(dir, 'aside', 'deep'));
  swap.move(path.join(dir, 'a'), path.join(dir, 'aside', 'deep', 'a'));
  swap.move(path.join(dir, 'b'), path.join(dir, 'aside', 'b'));
  expect(swap.undo()).toEqual([]);
  expect(fs.readdirSync(dir).sort()).toEqual(['a', 'b']);

  swap.mkdir(path.join(dir, 'aside'));
  swap.move(path.join(dir, 'a'), path.join(dir, 'aside', 'a'));
  // Something else took the old name meanwhile: that move cannot be taken back, the rest still is.
  fs.writeFileSync(path.join(dir, 'a'), 'someone else\n');
  const stuck = swap.undo();
  expect(stuck).toHaveLength(2);
  expect(stuck[0]).toMatch(/aside\/a back to .*\/a/);
  expect(fs.readFileSync(path.join(dir, 'aside', 'a'), 'utf8')).toBe('a\n');
});
