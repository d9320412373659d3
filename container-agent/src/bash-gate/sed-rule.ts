/**
 * `sed`: GNU sed runs programs with the `e` command and the `s///e` flag, and touches files with
 * `r R w W` and `s///w`. The script is read command by command (addresses, then one command letter and
 * its arguments) so that these letters inside a regex or replacement do not count, and a letter we do
 * not know escalates. `--sandbox` makes sed itself refuse them, so any script is fine then; `-f` reads a
 * script we cannot see.
 */
import type { ArgCheck } from './arg-check.ts';
import { computedArgFinding } from './arg-check.ts';
import { scanOptions } from './option-scan.ts';
import type { OptionSpec } from './option-scan.ts';
import { quote } from './verdict.ts';
import type { Finding } from './verdict.ts';
import { words } from './word-list.ts';

const SED_OPTIONS: OptionSpec = {
  allowUnknown: false,
  shortFlags: 'nrEsuzb',
  shortWithValue: 'el',
  shortOptionalValue: 'i',
  longWithValue: ['expression', 'line-length'],
  longOptionalValue: ['in-place'],
  longFlags: words(`
    quiet silent regexp-extended separate unbuffered null-data zero-terminated posix debug
    follow-symlinks sandbox binary help version
  `),
  deniedShort: { f: 'sed -f reads a script file that cannot be checked' },
  deniedLong: { file: 'sed --file reads a script file that cannot be checked' },
};

/** The shell-running forms may reach the network; the file forms stay on this machine. */
const RUNS_OR_FILES: Readonly<Record<string, Finding>> = {
  e: { reason: 'sed e command runs a shell command', network: true },
  r: { reason: 'sed r command reads a file named in the script', network: false },
  R: { reason: 'sed R command reads a file named in the script', network: false },
  w: { reason: 'sed w command writes a file named in the script', network: false },
  W: { reason: 'sed W command writes a file named in the script', network: false },
};

/** Commands without arguments (GNU), plus `l`/`L`/`q`/`Q` whose optional number we skip. */
const SIMPLE = new Set([
  '=',
  'd',
  'D',
  'g',
  'G',
  'h',
  'H',
  'n',
  'N',
  'p',
  'P',
  'x',
  'z',
  'F',
  'l',
  'L',
  'q',
  'Q',
]);

class SedScanError extends Error {}

/** Returns why the script escalates, or null. Exported for unit tests. */
export function checkSedScript(script: string): Finding | null {
  try {
    return scanScript(script);
  } catch (error) {
    if (error instanceof SedScanError)
      return { reason: `sed script not understood (${error.message})`, network: true };
    throw error;
  }
}

function scanScript(s: string): Finding | null {
  let i = 0;
  const n = s.length;
  const skipBlanks = (): void => {
    while (i < n && (s[i] === ' ' || s[i] === '\t')) i++;
  };
  /** Skips a bracket expression the way GNU sed does: backslashes are literal, `[:x:]` nests. */
  const skipBracket = (): void => {
    i++;
    if (s[i] === '^') i++;
    if (s[i] === ']') i++;
    while (i < n) {
      const c = s[i] as string;
      if (c === ']') {
        i++;
        return;
      }
      if (c === '[' && (s[i + 1] === ':' || s[i + 1] === '.' || s[i + 1] === '=')) {
        const close = s.indexOf(`${s[i + 1]}]`, i + 2);
        if (close === -1) throw new SedScanError('unterminated bracket expression');
        i = close + 2;
        continue;
      }
      if (c === '\n') throw new SedScanError('unterminated bracket expression');
      i++;
    }
    throw new SedScanError('unterminated bracket expression');
  };
  /**
   * Reads a delimited part, honouring backslash escapes. In a regex GNU sed does not end the part at a
   * delimiter inside a bracket expression (`s/[/]/x/`); in a replacement it does.
   */
  const readDelimited = (delim: string, regex: boolean): void => {
    while (i < n) {
      const c = s[i] as string;
      if (c === '\\') {
        i += 2;
        continue;
      }
      if (c === delim) {
        i++;
        return;
      }
      if (regex && c === '[') {
        skipBracket();
        continue;
      }
      if (c === '\n') throw new SedScanError('unterminated expression');
      i++;
    }
    throw new SedScanError('unterminated expression');
  };
  const readAddress = (): boolean => {
    const c = s[i];
    if (c === undefined) return false;
    if (/[0-9]/.test(c)) {
      while (i < n && /[0-9~]/.test(s[i] as string)) i++;
      return true;
    }
    if (c === '$') {
      i++;
      return true;
    }
    if (c === '/' || c === '\\') {
      let delim = '/';
      if (c === '\\') {
        delim = s[i + 1] ?? '';
        if (delim === '' || delim === '\n' || delim === '\\' || delim === '[')
          throw new SedScanError('bad address delimiter');
        i++;
      }
      i++;
      readDelimited(delim, true);
      while (i < n && (s[i] === 'I' || s[i] === 'M')) i++;
      return true;
    }
    return false;
  };
  /** To the end of the line, where a backslash escapes the newline (a/i/c text). */
  const skipText = (): void => {
    while (i < n && s[i] !== '\n') {
      if (s[i] === '\\') i++;
      i++;
    }
  };
  /**
   * A label (`:`, `b`, `t`, `T`) or `v`'s version, as GNU sed 4.9 reads it (`read_label`): leading
   * blanks, then up to a blank, `;` or newline. What follows on the same line is more commands (`:a e id`
   * runs `id`), so the scan goes on from there; where GNU would reject the rest, reading it as commands
   * only makes us stricter.
   */
  const skipLabel = (): void => {
    skipBlanks();
    while (i < n && !/[\s;]/.test(s[i] as string)) i++;
  };

  while (i < n) {
    const c = s[i] as string;
    if (c === ' ' || c === '\t' || c === '\n' || c === ';') {
      i++;
      continue;
    }
    if (c === '#') {
      while (i < n && s[i] !== '\n') i++;
      continue;
    }
    if (c === '}') {
      i++;
      continue;
    }
    // Addresses: addr1[,addr2] with GNU forms 0,/re/  addr,+N  addr,~N  first~step.
    if (readAddress()) {
      skipBlanks();
      if (s[i] === ',') {
        i++;
        skipBlanks();
        if (s[i] === '+' || s[i] === '~') {
          i++;
          while (i < n && /[0-9]/.test(s[i] as string)) i++;
        } else if (!readAddress()) {
          throw new SedScanError('missing second address');
        }
      }
    }
    skipBlanks();
    while (s[i] === '!') {
      i++;
      skipBlanks();
    }
    const cmd = s[i];
    if (cmd === undefined) throw new SedScanError('missing command');
    i++;
    if (Object.hasOwn(RUNS_OR_FILES, cmd)) return RUNS_OR_FILES[cmd] as Finding;
    if (cmd === '{') continue;
    if (SIMPLE.has(cmd)) {
      skipBlanks();
      while (i < n && /[0-9]/.test(s[i] as string)) i++;
      continue;
    }
    if (cmd === 'a' || cmd === 'i' || cmd === 'c') {
      skipText();
      continue;
    }
    if (cmd === ':' || cmd === 'b' || cmd === 't' || cmd === 'T' || cmd === 'v') {
      skipLabel();
      continue;
    }
    if (cmd === 's' || cmd === 'y') {
      const delim = s[i];
      if (delim === undefined || delim === '\n' || delim === '\\' || delim === '[')
        throw new SedScanError(`bad ${cmd} delimiter`);
      i++;
      // y has no bracket expressions; s has one in its regex, none in its replacement.
      readDelimited(delim, cmd === 's');
      readDelimited(delim, false);
      if (cmd === 'y') continue;
      // Flags: g p i I m M and a number; e runs the pattern space, w writes a file.
      while (i < n) {
        const flag = s[i] as string;
        if (flag === 'e') return { reason: 'sed s///e flag runs a shell command', network: true };
        if (flag === 'w')
          return { reason: 'sed s///w flag writes a file named in the script', network: false };
        if (/[gpiImM0-9]/.test(flag)) {
          i++;
          continue;
        }
        break;
      }
      continue;
    }
    throw new SedScanError(`unknown command ${quote(cmd)}`);
  }
  return null;
}

export const sedRule: ArgCheck = (command, args) => {
  const scan = scanOptions(command, args, SED_OPTIONS);
  if (scan.finding !== null) return scan.finding;
  const sandboxed = scan.options.some((o) => o.name === 'sandbox');
  const scripts: string[] = [];
  for (const option of scan.options) {
    if (option.name !== 'e' && option.name !== 'expression') continue;
    if (option.valueComputed || option.value === null) {
      if (sandboxed) continue;
      return { reason: 'sed script computed at run time cannot be checked', network: true };
    }
    scripts.push(option.value);
  }
  if (scripts.length === 0) {
    // Without -e, the first operand is the script; the rest are input files.
    const script = scan.operands[0];
    if (script === undefined) return null;
    if (script.value === null) {
      if (!sandboxed) return computedArgFinding(command, script);
    } else {
      scripts.push(script.value);
    }
  }
  if (sandboxed) return null;
  return checkSedScript(scripts.join('\n'));
};
