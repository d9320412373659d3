/**
 * Generators for the bash gate's differential fuzzing: commands assembled at random (from a fixed seed)
 * out of the pieces the classes found in review are made of, so that the real tools in the agent image,
 * not the gate's own reading, say what each command does.
 */

export type Random = () => number;
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
const some = (random: Random, min: number, max: number) => min + Math.floor(random() * (max - min + 1));

/** Single-quotes text for bash. */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** Pieces of sed scripts: labels and branches with what may follow them, and every command letter. */
const SED_PIECES = [
  ':a',
  ':top',
  'b',
  'b a',
  'ba',
  't x',
  'tx',
  'T y',
  'v',
  'v 4.2',
  'p',
  'P',
  'd',
  'D',
  'n',
  'N',
  'g',
  'G',
  'h',
  'H',
  'x',
  'z',
  '=',
  'l',
  'l 5',
  'q',
  'Q 3',
  'F',
  's/a/b/',
  's/a/b/g',
  's/a/b/w out',
  's/a/b/e',
  's/x/y/pw out',
  's|a|b|2',
  'y/ab/cd/',
  'e id',
  'e',
  'w out',
  'W out',
  'r /etc/hostname',
  'R /etc/hostname',
  'a text',
  'i\\',
  'c\\',
  '{p}',
  '{',
  '}',
  '$!',
  '1,3',
  '/re/I',
  '0~2',
  '# note',
  '!',
];
const SED_SEPARATORS = [' ', '  ', '\t', ';', '; ', '\n', ''];

export function sedScript(random: Random): string {
  const parts: string[] = [];
  const count = some(random, 1, 5);
  for (let i = 0; i < count; i++) {
    parts.push(pick(random, SED_PIECES));
    if (i < count - 1) parts.push(pick(random, SED_SEPARATORS));
  }
  return parts.join('');
}

/** Starts of paths (homes, working directories, roots) and components that may lead into /proc or /dev. */
const PATH_STARTS = [
  '~',
  '~/',
  '~sys/',
  '~root/',
  '~+/',
  '~-/',
  '$HOME/',
  '$PWD/',
  '/',
  './',
  '../',
  '/dev/',
  '/tmp/',
  '',
];
const PATH_PARTS = [
  'proc',
  'pro[c]',
  'pr?c',
  'p*',
  '{proc,x}',
  'dev',
  'd?v',
  'fd',
  'f?',
  'std*',
  'stdin',
  'stdout',
  'tcp',
  'udp',
  '..',
  '.',
  '1',
  'self',
  'environ',
  'notes',
  '*',
  '$x',
  '"$x"',
];

export function pathWord(random: Random): string {
  const parts: string[] = [];
  for (let i = some(random, 1, 4); i > 0; i--) parts.push(pick(random, PATH_PARTS));
  return pick(random, PATH_STARTS) + parts.join('/');
}

/**
 * The marker a command leaves when it ran a program (every program-running piece below touches it).
 * Pieces that write a file named on the command line write `out` instead: the gate lets those run.
 */
export const MARKER = '/tmp/gate-fuzz-marker';

const FIND_PIECES = [
  '-name x',
  "-name '*.txt'",
  '-type f',
  '-maxdepth 1',
  '-print',
  '-print0',
  `-exec touch ${MARKER} ;`,
  `-exec touch ${MARKER} {} +`,
  `-execdir touch ${MARKER} ;`,
  `-ok touch ${MARKER} ;`,
  '-fprint out',
  '-fprint0 out',
  '-fls out',
  '-fprintf out x',
  '-printf %p',
  '-newer notes.txt',
  '-quit',
  '-o',
  '!',
  '(',
  ')',
  '-delete',
];

export function findCommand(random: Random): string {
  const parts: string[] = [];
  for (let i = some(random, 1, 4); i > 0; i--) parts.push(pick(random, FIND_PIECES));
  // Words as bash would see them: `;`, `(`, `)` and `!` need quoting on the command line.
  return `find . ${parts
    .map((p) =>
      p
        .split(' ')
        .map((w) => (/^[;()!]$/.test(w) ? `\\${w}` : w))
        .join(' '),
    )
    .join(' ')}`;
}

const AWK_PIECES = [
  '{print}',
  '{print $1}',
  'END{print NR}',
  'BEGIN{x=1}',
  `BEGIN{system("touch ${MARKER}")}`,
  '{print > "out"}',
  '{print >> "out"}',
  `{print | "touch ${MARKER}"}`,
  `BEGIN{"touch ${MARKER}" | getline}`,
  `BEGIN{while (("touch ${MARKER}" | getline x) > 0) {}}`,
  '{printf "%s" , $0 > "out"}',
  'BEGIN{fflush()}',
  '{getline line < "/etc/hostname"}',
  'BEGIN{close("x")}',
  'NR==1',
  '/a/',
];

export function awkCommand(random: Random): string {
  const parts: string[] = [];
  for (let i = some(random, 1, 3); i > 0; i--) parts.push(pick(random, AWK_PIECES));
  return `awk ${shellQuote(parts.join(' '))} notes.txt`;
}

const TAR_PIECES = [
  '-cf a2.tar notes.txt',
  '-tf a.tar',
  '-xf a.tar',
  '-tvf a.tar',
  `--to-command='touch ${MARKER}'`,
  '--checkpoint=1',
  `--checkpoint-action=exec='touch ${MARKER}'`,
  `-I 'touch ${MARKER}'`,
  `--use-compress-program='touch ${MARKER}'`,
  `-F 'touch ${MARKER}'`,
  `--info-script='touch ${MARKER}'`,
  `--rsh-command='touch ${MARKER}'`,
  '-f localhost:x.tar',
  '-cf out notes.txt',
  '-v',
  '-O',
  '-C .',
];

export function tarCommand(random: Random): string {
  const parts: string[] = [];
  for (let i = some(random, 1, 3); i > 0; i--) parts.push(pick(random, TAR_PIECES));
  return `tar ${parts.join(' ')}`;
}
