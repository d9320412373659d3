/**
 * Variables whose value changes which program runs or makes a program run code: assigning or exporting
 * them escalates, because a plain `NAME=value` before an allowlisted command would otherwise be enough
 * (`PATH=. ls`, `LD_PRELOAD=./x.so cat`, `TAR_OPTIONS=--to-command=sh tar x`).
 */
import { words } from './word-list.ts';

export const IDENTIFIER_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

const PROTECTED_EXACT = new Set(
  words(`
    PATH IFS ENV SHELL SHELLOPTS CDPATH PROMPT_COMMAND PS0 PS1 PS2 PS3 PS4 HISTFILE INPUTRC EXECIGNORE
    TEXTDOMAIN TEXTDOMAINDIR GCONV_PATH LOCPATH NLSPATH HOSTALIASES GLIBC_TUNABLES POSIXLY_CORRECT TMOUT
    RIPGREP_CONFIG_PATH AWKPATH AWKLIBPATH ZIPOPT PAGER MANPAGER EDITOR VISUAL BROWSER SUDO_ASKPASS SSH_ASKPASS
  `),
);
/** Tilde expansion and `$HOME`/`$PWD` are trusted to be the directories the container started with. */
const TRUSTED_DIRECTORIES = new Set(['HOME', 'PWD', 'OLDPWD']);

/** Prefixes: the shell's own (BASH_ENV, BASH_CMDS, BASH_ALIASES, …), the loader, and tools' option variables. */
const PROTECTED_PREFIXES = [
  'BASH',
  'LD_',
  'TAR_',
  'LESS',
  'GIT_',
  'PYTHON',
  'PERL',
  'RUBY',
  'NODE_',
  'NPM_',
  'MALLOC_',
];

export function isProtectedVariable(name: string): boolean {
  if (PROTECTED_EXACT.has(name) || TRUSTED_DIRECTORIES.has(name)) return true;
  return PROTECTED_PREFIXES.some((prefix) => name.startsWith(prefix));
}

export function protectedVariableReason(name: string): string {
  return `assigning ${name} can change which program runs or make a program run code`;
}
