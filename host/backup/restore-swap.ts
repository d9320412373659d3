import fs from 'node:fs';
import path from 'node:path';
import { errorMessage } from '../errors/error-message.ts';

export type Rename = (from: string, to: string) => void;

/**
 * The renames that put a restore in place, each remembered so that a failure halfway can take back every
 * one already done. Only renames within one file system and creating empty folders: no step copies or
 * deletes data, so each is taken back by its opposite.
 */
export interface Swap {
  /** Moves `from` to `to`, which must not exist (a rename would silently replace a file there). */
  move(from: string, to: string): void;
  /** Creates a folder that is not there yet, and its missing parents. */
  mkdir(dir: string): void;
  /**
   * Takes back every step, newest first, and forgets them. Returns what could not be taken back, one line
   * each (empty: everything is where it was).
   */
  undo(): string[];
}

export function createSwap(rename: Rename = fs.renameSync): Swap {
  const undos: { what: string; run: () => void }[] = [];
  const exists = (p: string) => fs.lstatSync(p, { throwIfNoEntry: false }) !== undefined;
  const renameOnlyInto = (from: string, to: string) => {
    if (exists(to)) throw new Error(`${to} is in the way`);
    rename(from, to);
  };
  const swap: Swap = {
    move(from, to) {
      renameOnlyInto(from, to);
      undos.push({ what: `${to} back to ${from}`, run: () => renameOnlyInto(to, from) });
    },
    mkdir(dir) {
      if (exists(dir)) return;
      swap.mkdir(path.dirname(dir));
      fs.mkdirSync(dir, { mode: 0o700 });
      undos.push({ what: `remove the folder ${dir}`, run: () => fs.rmdirSync(dir) });
    },
    undo() {
      const failed: string[] = [];
      for (const step of undos.splice(0).reverse()) {
        try {
          step.run();
        } catch (err) {
          failed.push(`${step.what} (${errorMessage(err).split('\n')[0]})`);
        }
      }
      return failed;
    },
  };
  return swap;
}
