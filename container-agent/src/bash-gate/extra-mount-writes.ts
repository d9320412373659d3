/**
 * Deleting, truncating or overwriting files on an extra mount is a write the policy decides (a tainted
 * run asks), not local work. A target counts when it could lie on an extra mount from any directory the
 * command could be in (see working-directory.ts): a path under /workspace/extra, a glob or `..` that
 * could reach it, a value the source does not fix (`"$f"`, `$(…)`), or a relative path while the
 * working directory could be an extra mount or is unknown.
 */
import { quote } from './verdict.ts';
import type { WordInfo } from './rule-types.ts';
import { pathsFrom, type WorkingDirectories } from './working-directory.ts';

/** Where extra mounts appear in the container; some are read-write folders of the owner's. */
const EXTRA_ROOT = '/workspace/extra';

/** Commands that may delete, truncate, replace or create the files they are given (or, by default, files in the working directory). */
const MODIFYING_COMMANDS = new Set([
  'rm',
  'rmdir',
  'unlink',
  'mv',
  'cp',
  'ln',
  'truncate',
  'shred',
  'touch',
  'mkdir',
  'mktemp',
  'chmod',
  'tee',
  'dd',
  'install',
  'uniq',
  'split',
  'csplit',
  'tar',
  'unzip',
  'gzip',
  'gunzip',
  'bzip2',
  'bunzip2',
  'xz',
  'unxz',
  'zstd',
  'unzstd',
]);

/** Change only their destination (the last operand, unless -t names it), and only by copying. */
const COPYING_COMMANDS = new Set(['cp', 'install']);

/** Whether the path, as text, could lie on an extra mount: under it, or a glob or prefix that could become it. */
export function couldBeExtraMount(text: string): boolean {
  if (text === '..' || text.startsWith('../')) return true;
  if (!text.startsWith('/')) return false;
  const fixed = /^[^*?[{$`\\]*/.exec(text)?.[0] ?? '';
  const normalized = fixed.replace(/\/+/g, '/');
  if (normalized.startsWith(EXTRA_ROOT)) return true;
  // A fixed start that stops early (`/work*`, `/$x`) could still become /workspace/extra.
  return fixed.length < text.length && EXTRA_ROOT.startsWith(normalized);
}

/** Whether the word, as a path, could name something on an extra mount. */
export function couldReachExtraMount(
  directories: WorkingDirectories,
  word: Pick<WordInfo, 'text' | 'value'>,
): boolean {
  const paths = pathsFrom(directories, word);
  return paths === null || paths.some(couldBeExtraMount);
}

/** Whether some directory the command could be in is, or could be, on an extra mount. */
export function mayRunOnExtraMount(directories: WorkingDirectories): boolean {
  return directories === null || directories.some(couldBeExtraMount);
}

function plain(word: WordInfo): string {
  return word.value ?? word.text.replace(/["']/g, '');
}

/** Why this command may change files on an extra mount, or null. */
export function extraMountWrite(
  name: string,
  args: readonly WordInfo[],
  directories: WorkingDirectories,
): string | null {
  const texts = args.map(plain);
  const modifies =
    MODIFYING_COMMANDS.has(name) ||
    (name === 'sed' && texts.some((a) => /^-(?:[a-zA-Z]*i|-in-place)/.test(a))) ||
    (name === 'sort' && texts.some((a) => /^-(?:[a-zA-Z]*o|-output)/.test(a))) ||
    (name === 'find' && texts.some((a) => a === '-delete'));
  if (!modifies) return null;
  // Relative paths, defaults (`find -delete`, `tar x`, `split`) and globs all land in the working directory.
  if (mayRunOnExtraMount(directories))
    return `${name} may change files on an extra mount (the working directory could be one)`;
  // cp and install change only their destination, unless -t names it or they link instead of copying.
  const destinationOnly =
    COPYING_COMMANDS.has(name) &&
    !texts.some((a) => /^(?:-[a-zA-Z]*[tsl]|--target|--link|--symbolic-link)/.test(a));
  const candidates = destinationOnly ? args.slice(-1) : args;
  for (const arg of candidates) {
    // `dd of=FILE` names its output inside the word.
    const word =
      name === 'dd' && /^of=/.test(plain(arg))
        ? { text: plain(arg).slice(3), value: arg.value?.slice(3) ?? null }
        : arg;
    if (couldReachExtraMount(directories, word))
      return `${name} may change files on an extra mount (${quote(arg.text)})`;
  }
  return null;
}
