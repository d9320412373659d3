/**
 * Where a command's relative paths and globs point. Commands start in the group folder, but `cd` (and
 * `pushd`) move them: after `cd /workspace/extra/x`, `rm -rf *` deletes the owner's files on an extra
 * mount. The walk goes in source order, but a `cd` in a branch, a loop, a function or behind `||` may or
 * may not have run when a later command runs, so this does not follow one path: it collects every
 * directory the command could be in, whatever ran before (a set that only grows), and a path is judged
 * against each of them. A `cd` whose target is not fixed in the source (`cd "$d"`, `cd -`, a glob)
 * makes the directory unknown, and then every relative path could be anywhere.
 */
import path from 'node:path';
import type { SyntaxNode } from './syntax-tree.ts';
import type { WordInfo } from './rule-types.ts';

/** The group folder, where every command starts: relative paths are kept relative to it. */
export const START_DIRECTORY = '';
/** The agent's HOME (`~`, `$HOME`): a trusted directory of its own, never an extra mount. */
const HOME_DIRECTORY = '~';

/** Possible working directories, or null when one of them is unknown. */
export type WorkingDirectories = readonly string[] | null;

/** Past this many possible directories, the directory counts as unknown. */
const MAX_DIRECTORIES = 32;

const HOME_WORD_RE = /^(?:~|\$HOME|\$\{HOME\})(\/.*)?$/;
const COMPUTED_RE = /[$`*?[{\\]/;
const DIRECTORY_COMMANDS = new Set(['cd', 'pushd', 'popd']);

/** What one `cd`/`pushd`/`popd` can move to: a literal path, or null when the target is unknown. */
function targetOf(command: string, operands: readonly WordInfo[]): string | null {
  // Options (-L, -P, -e, -@) do not change where a fixed target leads; `--` ends them.
  let rest = operands;
  while (rest[0]?.value !== undefined && rest[0].value !== null && /^-[LPe@]+$/.test(rest[0].value))
    rest = rest.slice(1);
  if (rest[0]?.value === '--') rest = rest.slice(1);
  // popd, and pushd without a directory, rotate the stack (which DIRSTACK can rewrite): unknown.
  if (command !== 'cd' && rest.length === 0) return null;
  if (rest.length > 1) return null;
  const operand = rest[0];
  if (operand === undefined) return HOME_DIRECTORY;
  if (operand.value !== null) {
    // `cd -` is OLDPWD; `pushd +1` rotates the stack.
    if (operand.value === '-' || /^[+-][0-9]+$/.test(operand.value) || operand.value === '') return null;
    return operand.value;
  }
  const home = HOME_WORD_RE.exec(operand.text.replace(/"/g, ''));
  if (home !== null && !COMPUTED_RE.test(home[1] ?? '')) return `${HOME_DIRECTORY}${home[1] ?? ''}`;
  return null;
}

function join(base: string, target: string): string {
  if (target.startsWith('/')) return path.posix.normalize(target);
  if (target === HOME_DIRECTORY || target.startsWith(`${HOME_DIRECTORY}/`)) return target;
  if (base === START_DIRECTORY) return path.posix.normalize(target);
  return path.posix.normalize(`${base}/${target}`);
}

/**
 * Every directory the command could be in when any of its commands runs. `operandsOf` gives a
 * command's analysed argument words (the caller's word analysis, so quoting is read as bash reads it),
 * or null when it cannot tell them all.
 */
export function possibleDirectories(
  root: SyntaxNode,
  commandName: (node: SyntaxNode) => string | null,
  operandsOf: (command: SyntaxNode, parent: SyntaxNode | null) => WordInfo[] | null,
): WorkingDirectories {
  const targets: string[] = [];
  const stack: Array<[SyntaxNode, SyntaxNode | null]> = [[root, null]];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [node, parent] = top;
    for (const child of node.children) stack.push([child, node]);
    if (node.type !== 'command') continue;
    const name = commandName(node);
    if (name === null || !DIRECTORY_COMMANDS.has(name)) continue;
    const operands = operandsOf(node, parent);
    const target = operands === null ? null : targetOf(name, operands);
    if (target === null || target.split('/').some(couldBeParent)) return null;
    targets.push(target);
  }
  // Absolute and home targets are directories of their own. A relative target moves below wherever the
  // command was, and may run again and again (a loop, a function): from each directory, any
  // subdirectory, written as a glob for one more level (`/tmp/*`), whose fixed start is what counts.
  const directories = new Set([START_DIRECTORY]);
  for (const target of targets) if (!isRelative(target)) directories.add(join(START_DIRECTORY, target));
  if (targets.some(isRelative)) for (const base of [...directories]) directories.add(join(base, '*'));
  return directories.size > MAX_DIRECTORIES ? null : [...directories];
}

function isRelative(target: string): boolean {
  return !target.startsWith('/') && target !== HOME_DIRECTORY && !target.startsWith(`${HOME_DIRECTORY}/`);
}

/** A path component that is, or may expand to, `..` (a glob or brace with a dot in it). */
function couldBeParent(component: string): boolean {
  if (component === '..') return true;
  // A glob matches a leading dot only when it spells one; braces may spell `..` in pieces.
  return (
    (component.startsWith('.') && /[*?[]/.test(component)) ||
    (component.includes('{') && component.includes('.'))
  );
}

/**
 * The word as the paths it could name from each possible directory, or null when it could name any
 * path at all: its value comes from a variable or a command (`"$f"`, `$(…)`), the directory is unknown,
 * or it may climb with `..` (which the kernel resolves through symlinks, not as text).
 */
export function pathsFrom(
  directories: WorkingDirectories,
  word: Pick<WordInfo, 'text' | 'value'>,
): string[] | null {
  const plain =
    word.value ?? word.text.replace(/["']/g, '').replace(/^\$(?:HOME|\{HOME\})(?=\/|$)/, HOME_DIRECTORY);
  if (word.value === null && /[$`]/.test(plain)) return null;
  if (plain.split('/').some(couldBeParent)) return null;
  if (plain.startsWith('/')) return [plain];
  if (plain === HOME_DIRECTORY || plain.startsWith(`${HOME_DIRECTORY}/`)) return [plain];
  if (directories === null) return null;
  return directories.map((base) => join(base, plain));
}
