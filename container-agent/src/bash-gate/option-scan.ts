/**
 * Reads a command's arguments the way GNU getopt_long does, so that rules can deny options such as
 * `sort --compress-program` without being fooled by clusters (`-ez`), attached values (`-fFILE`,
 * `--opt=v`), abbreviations (`--compress-prog`) or options after operands.
 *
 * A word computed at run time could itself be an option, so it is accepted only where it cannot be one:
 * after `--`, as the value of an option, or when quoted and starting with a fixed character other than
 * `-`.
 */
import { quote } from './verdict.ts';
import type { Finding } from './verdict.ts';
import type { WordInfo } from './rule-types.ts';

export interface OptionSpec {
  /** Short letters that take a value: the rest of the cluster, or the next argument. */
  shortWithValue?: string;
  /** Short letters whose value can only be attached (`-i.bak`). */
  shortOptionalValue?: string;
  /** Short letters that are plain flags (only needed when unknown options escalate). */
  shortFlags?: string;
  /** Long names taking a value: `--name=v` or `--name v`. */
  longWithValue?: readonly string[];
  /** Long names whose value can only be attached with `=`. */
  longOptionalValue?: readonly string[];
  /** Long names that are plain flags. */
  longFlags?: readonly string[];
  /** Letter → why it escalates. */
  deniedShort?: Readonly<Record<string, string>>;
  /** Long name → why it escalates. Abbreviations of these escalate too. */
  deniedLong?: Readonly<Record<string, string>>;
  /** When false, an option that is not listed escalates. */
  allowUnknown: boolean;
  /** POSIX style: the first operand ends the options (awk's program, for instance). */
  stopAtFirstOperand?: boolean;
}

export interface ScannedOption {
  /** The letter, or the full long name it resolved to. */
  name: string;
  /** The value when fixed; null when absent or computed. */
  value: string | null;
  valueComputed: boolean;
}

export interface ScanResult {
  options: ScannedOption[];
  operands: WordInfo[];
  finding: Finding | null;
}

/** What every denied option has in common: it makes the tool run something. */
const DENIED_IS_NETWORK = true;

function deny(reason: string): ScanResult {
  return { options: [], operands: [], finding: { reason, network: DENIED_IS_NETWORK } };
}

function computedOptionFinding(command: string, arg: WordInfo): Finding {
  return {
    reason: `${command} has an argument computed at run time (${quote(arg.text)}) that could be an option`,
    network: true,
  };
}

/** An argument computed at run time, outside option values: can it be an option? */
export function mayBeOption(arg: WordInfo): boolean {
  if (arg.value !== null) return arg.value.startsWith('-') && arg.value !== '-';
  return arg.splits || arg.prefix === '' || arg.prefix.startsWith('-');
}

interface LongMatch {
  name: string;
  denied: string | null;
  takesValue: 'required' | 'optional' | 'none';
}

function resolveLong(spec: OptionSpec, given: string): LongMatch | 'unknown' {
  const denied = spec.deniedLong ?? {};
  const required = spec.longWithValue ?? [];
  const optional = spec.longOptionalValue ?? [];
  const flags = spec.longFlags ?? [];
  const kind = (name: string): LongMatch => ({
    name,
    denied: Object.hasOwn(denied, name) ? (denied[name] as string) : null,
    takesValue: required.includes(name) ? 'required' : optional.includes(name) ? 'optional' : 'none',
  });
  const all = [...Object.keys(denied), ...required, ...optional, ...flags];
  if (all.includes(given)) return kind(given);
  // getopt_long accepts any unambiguous abbreviation; an abbreviation of a denied option may resolve
  // to it in the real tool even if our list is incomplete, so it escalates.
  const deniedMatch = Object.keys(denied).find((name) => name.startsWith(given));
  if (deniedMatch !== undefined) return kind(deniedMatch);
  const candidates = all.filter((name) => name.startsWith(given));
  const first = candidates[0];
  return first === undefined ? 'unknown' : kind(first);
}

export function scanOptions(command: string, args: readonly WordInfo[], spec: OptionSpec): ScanResult {
  const options: ScannedOption[] = [];
  const operands: WordInfo[] = [];
  const shortWithValue = spec.shortWithValue ?? '';
  const shortOptional = spec.shortOptionalValue ?? '';
  const shortFlags = spec.shortFlags ?? '';
  const deniedShort = spec.deniedShort ?? {};
  let endOfOptions = false;

  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as WordInfo;
    if (endOfOptions) {
      operands.push(arg);
      continue;
    }
    if (arg.value === '--') {
      endOfOptions = true;
      continue;
    }
    if (!mayBeOption(arg)) {
      operands.push(arg);
      if (spec.stopAtFirstOperand) endOfOptions = true;
      continue;
    }
    // From here the argument starts with `-` (fixed) or is computed with no safe fixed start.
    const text = arg.value ?? arg.prefix;
    const computed = arg.value === null;
    if (computed && !text.startsWith('-'))
      return { options, operands, finding: computedOptionFinding(command, arg) };

    if (text.startsWith('--')) {
      const eq = text.indexOf('=');
      if (computed && eq === -1) return { options, operands, finding: computedOptionFinding(command, arg) };
      const given = eq === -1 ? text.slice(2) : text.slice(2, eq);
      const match = resolveLong(spec, given);
      if (match === 'unknown') {
        if (!spec.allowUnknown) return deny(`${command} option --${given} is not on the local allowlist`);
        options.push({ name: given, value: eq === -1 ? null : text.slice(eq + 1), valueComputed: computed });
        continue;
      }
      if (match.denied !== null) return deny(match.denied);
      let value: string | null = eq === -1 ? null : text.slice(eq + 1);
      let valueComputed = computed;
      if (match.takesValue === 'required' && eq === -1) {
        const next = args[i + 1];
        if (next === undefined) return deny(`${command} option --${match.name} is missing its value`);
        value = next.value;
        valueComputed = next.value === null;
        i++;
      }
      options.push({ name: match.name, value, valueComputed });
      continue;
    }

    // A cluster of short options: -abc, -fVALUE, -f VALUE.
    for (let j = 1; j < text.length; j++) {
      const letter = text[j] as string;
      if (Object.hasOwn(deniedShort, letter)) return deny(deniedShort[letter] as string);
      if (shortWithValue.includes(letter) || shortOptional.includes(letter)) {
        const attached = text.slice(j + 1);
        if (attached !== '' || computed || shortOptional.includes(letter)) {
          options.push({ name: letter, value: computed ? null : attached || null, valueComputed: computed });
          break;
        }
        const next = args[i + 1];
        if (next === undefined) return deny(`${command} option -${letter} is missing its value`);
        options.push({ name: letter, value: next.value, valueComputed: next.value === null });
        i++;
        break;
      }
      if (!spec.allowUnknown && !shortFlags.includes(letter)) {
        return deny(`${command} option -${letter} is not on the local allowlist`);
      }
      options.push({ name: letter, value: null, valueComputed: false });
      if (computed && j === text.length - 1) {
        // The rest of the cluster is computed: it could hold any letter.
        return { options, operands, finding: computedOptionFinding(command, arg) };
      }
    }
    if (computed && text.length === 1)
      return { options, operands, finding: computedOptionFinding(command, arg) };
  }
  return { options, operands, finding: null };
}
