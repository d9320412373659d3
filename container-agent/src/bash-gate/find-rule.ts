/**
 * `find`: every primary of the expression must be one we know, with its arguments consumed so that a
 * pattern such as `-name -exec` is not mistaken for an action. Actions that run programs escalate.
 */
import type { ArgCheck } from './arg-check.ts';
import { computedArgFinding } from './arg-check.ts';
import { mayBeOption } from './option-scan.ts';
import { quote } from './verdict.ts';
import type { WordInfo } from './rule-types.ts';
import { words } from './word-list.ts';

const RUNS_PROGRAM: Readonly<Record<string, string>> = {
  '-exec': 'find -exec runs another program',
  '-execdir': 'find -execdir runs another program',
  '-ok': 'find -ok runs another program',
  '-okdir': 'find -okdir runs another program',
};

/** Primary → how many arguments it takes. */
const PRIMARIES: ReadonlyMap<string, number> = new Map([
  // tests, options and actions that only print, prune, remove (like rm) or write a listing (like tee)
  ...words(`
    -name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname -type -xtype -size -mtime
    -mmin -atime -amin -ctime -cmin -newer -anewer -cnewer -perm -user -group -uid -gid -links -inum -samefile
    -used -fstype -context -maxdepth -mindepth -regextype -files0-from -printf -fprint -fprint0 -fls
  `).map((p) => [p, 1] as const),
  ['-fprintf', 2],
  ...words(`
    -empty -true -false -readable -writable -executable -nouser -nogroup -depth -d -mount -xdev -follow -noleaf
    -ignore_readdir_race -noignore_readdir_race -daystart -warn -nowarn -help --help -version --version -print
    -print0 -ls -prune -quit -delete ( ) ! -not -a -and -o -or ,
  `).map((p) => [p, 0] as const),
]);

const NEWER_XY = /^-newer[aBcmt][aBcmt]$/;

function isExpressionStart(arg: WordInfo): boolean {
  return arg.value === '(' || arg.value === '!' || mayBeOption(arg);
}

export const findRule: ArgCheck = (command, args) => {
  let i = 0;
  // Global options before the paths: -H -L -P, -D debugopts, -Olevel.
  for (; i < args.length; i++) {
    const v = args[i]?.value;
    if (v === '-H' || v === '-L' || v === '-P' || (v !== undefined && v !== null && /^-O[0-9]$/.test(v)))
      continue;
    if (v === '-D') {
      i++;
      continue;
    }
    break;
  }
  // Starting points. A quoted computed one could still be a primary (`"$d"` = `-exec`), but the
  // program-running primaries need a `;` or `+` word to end them; without one it is only a path or a
  // primary that stays local.
  const terminated = args.some((a) => a.value === ';' || a.value === '+');
  for (; i < args.length; i++) {
    const arg = args[i] as WordInfo;
    if (arg.value === null && !arg.splits && !terminated) continue;
    if (isExpressionStart(arg)) break;
  }
  for (; i < args.length; i++) {
    const arg = args[i] as WordInfo;
    if (arg.value === null) return computedArgFinding(command, arg);
    const primary = arg.value;
    if (Object.hasOwn(RUNS_PROGRAM, primary))
      return { reason: RUNS_PROGRAM[primary] as string, network: true };
    const arity = PRIMARIES.get(primary) ?? (NEWER_XY.test(primary) ? 1 : -1);
    if (arity < 0)
      return { reason: `find primary ${quote(primary)} is not on the local allowlist`, network: true };
    // Arguments of primaries are patterns, numbers or file names: computed ones cannot add primaries.
    for (let k = 0; k < arity; k++) {
      const value = args[i + 1 + k];
      if (value === undefined) return { reason: `find ${primary} is missing its argument`, network: true };
      if (value.splits) return computedArgFinding(command, value);
    }
    i += arity;
  }
  return null;
};
