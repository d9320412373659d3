/**
 * `awk` (mawk, gawk): a program runs other programs through `system()`, pipes (`print | "cmd"`,
 * `"cmd" | getline`, gawk's `|&` coprocesses and `/inet/` sockets) and gawk's `@load` extensions and
 * indirect calls (`@f()`). Rather than parse awk, the program text must not contain `system`, a single
 * `|`, `@` or `/inet`; this turns away a few harmless programs (a regex with `|`) and lets none of those
 * through. Files named with -f, -E, -i or -l cannot be checked. gawk's `--sandbox` disables all of it,
 * but only when the command is spelled `gawk`: `awk` is mawk on Debian, and an awk that ignores an
 * option it does not know would run the program unsandboxed.
 */
import type { ArgCheck } from './arg-check.ts';
import { computedArgFinding } from './arg-check.ts';
import { scanOptions } from './option-scan.ts';
import type { OptionSpec } from './option-scan.ts';
import { words } from './word-list.ts';

const AWK_OPTIONS: OptionSpec = {
  allowUnknown: false,
  stopAtFirstOperand: true,
  shortFlags: 'bcCghMnNOPrsStVY',
  shortWithValue: 'Fve',
  shortOptionalValue: 'dLop',
  longWithValue: ['field-separator', 'assign', 'source'],
  longOptionalValue: ['dump-variables', 'lint', 'profile', 'pretty-print'],
  longFlags: words(`
    characters-as-bytes traditional copyright gen-pot help bignum use-lc-numeric non-decimal-data
    optimize no-optimize posix re-interval sandbox version csv
  `),
  deniedShort: {
    f: 'awk -f runs a program file that cannot be checked',
    E: 'awk -E runs a program file that cannot be checked',
    i: 'awk -i includes a source file that cannot be checked',
    l: 'awk -l loads a compiled extension',
    D: 'awk -D starts the debugger, which runs commands',
    W: 'awk -W options are not checked',
  },
  deniedLong: {
    file: 'awk --file runs a program file that cannot be checked',
    exec: 'awk --exec runs a program file that cannot be checked',
    include: 'awk --include includes a source file that cannot be checked',
    load: 'awk --load loads a compiled extension',
    debug: 'awk --debug starts the debugger, which runs commands',
  },
};

/** Returns why the program escalates, or null. Exported for unit tests. */
export function checkAwkProgram(program: string): string | null {
  if (program.includes('system')) return 'awk system() runs a shell command';
  if (program.replaceAll('||', '').includes('|')) return 'awk | runs a command through a pipe';
  if (program.includes('@')) return 'awk @ (gawk @load, @include or an indirect call) can run code';
  if (program.includes('/inet')) return 'awk /inet special files reach the network';
  return null;
}

export const awkRule: ArgCheck = (command, args) => {
  const scan = scanOptions(command, args, AWK_OPTIONS);
  if (scan.finding !== null) return scan.finding;
  if (command === 'gawk' && scan.options.some((o) => o.name === 'sandbox' || o.name === 'S')) return null;
  const programs: string[] = [];
  for (const option of scan.options) {
    if (option.name !== 'e' && option.name !== 'source') continue;
    if (option.valueComputed || option.value === null) {
      return { reason: 'awk program computed at run time cannot be checked', network: true };
    }
    programs.push(option.value);
  }
  if (programs.length === 0) {
    const program = scan.operands[0];
    if (program === undefined) return null;
    if (program.value === null) return computedArgFinding(command, program);
    programs.push(program.value);
  }
  for (const program of programs) {
    const problem = checkAwkProgram(program);
    if (problem !== null) return { reason: problem, network: true };
  }
  return null;
};
