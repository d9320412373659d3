/**
 * Shell builtins that are harmless except for one form: assigning to a name that bash evaluates
 * (`printf -v 'a[$(cmd)]'`, `read 'a[$(cmd)]'`), changing how later code is read (`set`, `shopt`), or
 * running another command (`command`, `env`).
 */
import type { ArgCheck } from './arg-check.ts';
import { firstComputed } from './arg-check.ts';
import { NUMERIC_SPECIALS } from './arithmetic.ts';
import { IDENTIFIER_RE, isProtectedVariable, protectedVariableReason } from './shell-variables.ts';
import { quote } from './verdict.ts';
import type { Finding } from './verdict.ts';
import type { WordInfo } from './rule-types.ts';
import { words } from './word-list.ts';

function nameFinding(command: string, arg: WordInfo | undefined): Finding | null {
  if (arg !== undefined && arg.value !== null && IDENTIFIER_RE.test(arg.value)) {
    return isProtectedVariable(arg.value)
      ? { reason: protectedVariableReason(arg.value), network: true }
      : null;
  }
  const shown = arg === undefined ? 'nothing' : quote(arg.text);
  return { reason: `${command} assigns to ${shown}, a name bash would evaluate as code`, network: true };
}

/** printf: `-v NAME` must be a plain name; a computed first word could itself be `-v…`. */
export const printfRule: ArgCheck = (command, args) => {
  const first = args[0];
  if (first === undefined) return null;
  if (first.value === null) {
    if (first.splits || first.prefix === '' || first.prefix.startsWith('-')) {
      return {
        reason: `${command} format ${quote(first.text)} is computed and could be the -v option`,
        network: true,
      };
    }
    return null;
  }
  if (first.value === '-v') return nameFinding(command, args[1]);
  if (first.value.startsWith('-v')) {
    return nameFinding(command, { ...first, value: first.value.slice(2) });
  }
  return null;
};

const READ_FLAGS = new Set(['r', 's']);
const READ_WITH_VALUE = new Set(['a', 'd', 'n', 'N', 'p', 't', 'u']);

/** read: options and names must be fixed; every name (and `-a NAME`) must be a plain name. */
export const readRule: ArgCheck = (command, args) => {
  const computed = firstComputed(command, args);
  if (computed !== null) return computed;
  let i = 0;
  for (; i < args.length; i++) {
    const value = args[i]?.value as string;
    if (value === '--') {
      i++;
      break;
    }
    if (!value.startsWith('-') || value === '-') break;
    for (let j = 1; j < value.length; j++) {
      const letter = value[j] as string;
      if (READ_FLAGS.has(letter)) continue;
      if (!READ_WITH_VALUE.has(letter)) {
        return { reason: `${command} option -${letter} is not on the local allowlist`, network: true };
      }
      const attached = value.slice(j + 1);
      const optionValue = attached !== '' ? { ...(args[i] as WordInfo), value: attached } : args[++i];
      if (letter === 'a') {
        const found = nameFinding(command, optionValue);
        if (found !== null) return found;
      }
      break;
    }
  }
  for (; i < args.length; i++) {
    const found = nameFinding(command, args[i]);
    if (found !== null) return found;
  }
  return null;
};

const SET_LETTERS = new Set(['e', 'u', 'x', 'v', 'f', 'C', 'o']);
const SET_OPTION_NAMES = new Set([
  'errexit',
  'nounset',
  'xtrace',
  'verbose',
  'noglob',
  'noclobber',
  'pipefail',
]);

/** set: a few error-handling and tracing options, and `set -- args` for positional parameters. */
export const setRule: ArgCheck = (command, args) => {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as WordInfo;
    if (arg.value === '--' || arg.value === '-') return null;
    if (arg.value === null)
      return { reason: `${command} option ${quote(arg.text)} is computed at run time`, network: true };
    const sign = arg.value[0];
    if (sign !== '-' && sign !== '+') return null;
    const letters = arg.value.slice(1);
    for (let j = 0; j < letters.length; j++) {
      const letter = letters[j] as string;
      if (!SET_LETTERS.has(letter))
        return { reason: `${command} ${sign}${letter} is not on the local allowlist`, network: true };
      if (letter === 'o') {
        if (j !== letters.length - 1)
          return { reason: `${command} ${quote(arg.text)} is not understood`, network: true };
        const name = args[i + 1]?.value;
        if (name === undefined) return null;
        if (name === null || !SET_OPTION_NAMES.has(name)) {
          return {
            reason: `${command} -o ${quote(args[i + 1]?.text ?? '')} is not on the local allowlist`,
            network: true,
          };
        }
        i++;
      }
    }
  }
  return null;
};

const SHOPT_NAMES = new Set(
  words(
    'nullglob dotglob globstar extglob nocaseglob failglob nocasematch lastpipe inherit_errexit globasciiranges',
  ),
);

/** shopt: only globbing and matching options (not expand_aliases, extdebug, …). */
export const shoptRule: ArgCheck = (command, args) => {
  const computed = firstComputed(command, args);
  if (computed !== null) return computed;
  for (const arg of args) {
    const value = arg.value as string;
    if (/^-[supqo]+$/.test(value)) continue;
    if (!SHOPT_NAMES.has(value))
      return { reason: `${command} ${quote(value)} is not on the local allowlist`, network: true };
  }
  return null;
};

/** command: only the lookup forms `command -v NAME` / `command -V NAME`; anything else runs NAME. */
export const commandRule: ArgCheck = (command, args) => {
  const first = args[0]?.value;
  if ((first === '-v' || first === '-V') && args.length >= 2 && args.every((a) => a.value !== null))
    return null;
  return { reason: `${command} runs another program`, network: true };
};

/** env: printing the environment is local; `env [opts] CMD` runs CMD. */
export const envRule: ArgCheck = (command, args) => {
  if (args.every((a) => a.value === '-0' || a.value === '--null')) return null;
  return {
    reason: `${command} with arguments runs another program or changes its environment`,
    network: true,
  };
};

/** wait: `-p NAME` assigns to a name; keep to fixed job ids and -n/-f. */
export const waitRule: ArgCheck = (command, args) => {
  // `$!` (the last background job) is always a number, so `wait $!` cannot smuggle in `-p`.
  const computed = firstComputed(
    command,
    args.filter((a) => !NUMERIC_SPECIALS.has(a.text)),
  );
  if (computed !== null) return computed;
  const option = args.find((a) => a.value !== null && a.value.startsWith('-') && !/^-[nf]+$/.test(a.value));
  return option === undefined
    ? null
    : { reason: `${command} option ${quote(option.text)} is not on the local allowlist`, network: true };
};
