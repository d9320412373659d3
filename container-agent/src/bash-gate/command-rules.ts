/**
 * The allowlist: which command names run locally, with which argument rule, and what every other known
 * name is (network tool, code runner, wrapper) so the reason says so. A name in neither list escalates
 * as unknown. Only bare names are looked up; `/bin/ls` or `./x` never reach this table.
 */
import { optionsRule } from './arg-check.ts';
import { awkRule } from './awk-rule.ts';
import { commandRule, envRule, printfRule, readRule, setRule, shoptRule, waitRule } from './builtin-rules.ts';
import { findRule } from './find-rule.ts';
import { sedRule } from './sed-rule.ts';
import { tarRule } from './tar-rule.ts';
import { testBuiltinRule } from './test-rule.ts';
import { words } from './word-list.ts';

import type { ArgCheck, CommandRule, CommandRuleTable } from './rule-types.ts';

export type { CommandRule, CommandRuleTable } from './rule-types.ts';

/**
 * Commands whose arguments cannot make them run a program or open a socket: any arguments, including
 * computed ones, are fine. (Paths like /dev/tcp/… only mean something to bash's own redirections.)
 */
const INERT_COMMANDS = words(`
  ls cat head tail wc uniq cut tr grep egrep fgrep nl fold paste join column expand unexpand rev tac od
  hexdump xxd strings comm cmp diff fmt pr tsort shuf numfmt csplit iconv jq tree file stat realpath
  readlink basename dirname du df mkdir rmdir touch cp mv rm ln tee truncate mktemp chmod
  md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum sum base64 base32 basenc
  gzip gunzip zcat bzip2 bunzip2 bzcat xz unxz xzcat zstd unzstd unzip
  echo printenv pwd date true false : seq yes sleep expr factor
  which type whoami id groups uname hostname nproc arch getconf locale tty logname uptime free ps
  cd pushd popd dirs exit return shift break continue umask help jobs
`);

const SORT_OPTIONS = optionsRule({
  allowUnknown: true,
  shortWithValue: 'koStT',
  longWithValue: words(
    'key output buffer-size field-separator temporary-directory parallel batch-size files0-from random-source sort',
  ),
  deniedLong: { 'compress-program': 'sort --compress-program runs another program' },
});

const RG_OPTIONS = optionsRule({
  allowUnknown: true,
  shortWithValue: 'ABCdEefgjMmrtT',
  longWithValue: words(`
    regexp file glob iglob type type-not type-add type-clear max-count after-context before-context context
    threads max-columns replace max-depth encoding colors color context-separator field-match-separator
    field-context-separator path-separator max-filesize sort sortr dfa-size-limit regex-size-limit engine
    ignore-file hyperlink-format generate
  `),
  deniedShort: { z: 'rg -z runs decompression programs' },
  deniedLong: {
    pre: 'rg --pre runs another program on every file',
    'pre-glob': 'rg --pre-glob belongs to --pre, which runs another program',
    'search-zip': 'rg --search-zip runs decompression programs',
    'hostname-bin': 'rg --hostname-bin runs another program',
  },
});

const SPLIT_OPTIONS = optionsRule({
  allowUnknown: true,
  shortWithValue: 'abClnt',
  longWithValue: words('suffix-length bytes line-bytes lines number separator additional-suffix'),
  deniedLong: { filter: 'split --filter runs a shell command' },
});

const ARG_RULES: Readonly<Record<string, ArgCheck>> = {
  find: findRule,
  sed: sedRule,
  awk: awkRule,
  gawk: awkRule,
  mawk: awkRule,
  nawk: awkRule,
  tar: tarRule,
  test: testBuiltinRule,
  '[': testBuiltinRule,
  printf: printfRule,
  read: readRule,
  set: setRule,
  shopt: shoptRule,
  command: commandRule,
  env: envRule,
  wait: waitRule,
  sort: SORT_OPTIONS,
  rg: RG_OPTIONS,
  split: SPLIT_OPTIONS,
};

const NETWORK_COMMANDS = words(`
  curl wget nc ncat netcat socat telnet ftp sftp tftp ssh scp rsync ping ping6 traceroute tracepath mtr dig
  nslookup host whois nmap openssl aria2c lynx w3m links elinks http https xh httpie wscat websocat gh aws
  gcloud az kubectl docker podman npm npx pnpm yarn pip pip3 pipx uv uvx poetry gem bundle cargo go apt
  apt-get aptitude yum dnf apk brew conda mamba snap flatpak mail sendmail mutt ldapsearch smbclient nsupdate
  ip ifconfig iptables certbot yt-dlp youtube-dl svn hg
`);

/** Shells, interpreters, compilers, editors and pagers: each can run any program. */
const CODE_RUNNERS = words(`
  bash sh zsh dash ksh mksh fish csh tcsh busybox python python2 python3 perl ruby irb node nodejs deno bun
  tsx ts-node php lua luajit tclsh wish expect R Rscript julia java jshell gcc g++ cc c++ clang clang++ tcc
  make cmake ninja meson vi vim nvim view nano emacs ed ex less more most pager man info tmux screen script
  dc gdb strace ltrace valgrind crontab at batch sqlite3 psql mysql
`);

/** Tools that look like file utilities but can run code; the reason says how. */
const HIDDEN_RUNNERS: Readonly<Record<string, string>> = {
  dd: "dd can write at any offset of any file, including a process's memory",
  zip: 'zip -T/-TT runs another program',
  patch: 'patch can run ed scripts',
  install: 'install --strip-program runs another program',
  diff3: 'diff3 --diff-program runs another program',
  sdiff: 'sdiff --diff-program runs another program',
  git: 'git can run programs from repository configuration (hooks, pager, fsmonitor)',
};

/** Builtins and tools whose job is to run another program or evaluate text as code. */
const WRAPPERS = words(`
  eval exec source . builtin nice nohup timeout stdbuf xargs sudo su doas watch time parallel setsid flock
  chroot unshare nsenter ionice taskset chrt runuser pkexec systemd-run coproc trap fc bind enable complete
  compgen alias unalias hash let mapfile readarray getopts caller
`);

/** Known not to reach the network or run programs, but not harmless enough to run unasked. */
const OFFLINE_ESCALATIONS: Readonly<Record<string, string>> = {
  kill: 'kill signals other processes',
  pkill: 'pkill signals other processes',
  killall: 'killall signals other processes',
  chown: 'chown changes file ownership',
  chgrp: 'chgrp changes file ownership',
  mkfifo: 'mkfifo creates special files',
  mknod: 'mknod creates special files',
  disown: 'disown detaches jobs from the shell',
  ulimit: 'ulimit changes resource limits',
};

const GIT_NETWORK_SUBCOMMANDS = new Set(
  words(`
    clone fetch pull push ls-remote remote submodule archive send-email request-pull svn p4 daemon fetch-pack
    send-pack http-fetch http-push instaweb
  `),
);

export function createDefaultCommandRules(): CommandRuleTable {
  const table = new Map<string, CommandRule>();
  const escalate = (name: string, reason: string, network: boolean): void => {
    table.set(name, { kind: 'escalate', reason, network });
  };
  for (const name of NETWORK_COMMANDS) escalate(name, `${name} reaches the network`, true);
  for (const name of CODE_RUNNERS) escalate(name, `${name} can run arbitrary code`, true);
  for (const name of WRAPPERS) escalate(name, `${name} runs another program or evaluates code`, true);
  for (const [name, reason] of Object.entries(HIDDEN_RUNNERS)) escalate(name, reason, true);
  for (const [name, reason] of Object.entries(OFFLINE_ESCALATIONS)) escalate(name, reason, false);
  for (const name of INERT_COMMANDS) table.set(name, { kind: 'local' });
  for (const [name, check] of Object.entries(ARG_RULES)) table.set(name, { kind: 'local', check });
  return table;
}

/** Names that escalate because they reach the network by themselves (for tests and docs). */
export function networkCommandNames(): readonly string[] {
  return NETWORK_COMMANDS;
}

/** A more precise reason for git's network subcommands (git escalates either way). */
export function gitReason(args: readonly { value: string | null }[]): string | null {
  const sub = args.find((a) => a.value !== null && !a.value.startsWith('-'))?.value;
  return sub !== undefined && sub !== null && GIT_NETWORK_SUBCOMMANDS.has(sub)
    ? `git ${sub} reaches the network`
    : null;
}

/** `python3.12`, `pip3.11`, `perl5.36` and the like are looked up under their family name. */
export function normalizeCommandName(name: string): string {
  if (/^python[0-9.]+$/.test(name)) return 'python';
  if (/^pip[0-9.]+$/.test(name)) return 'pip';
  if (/^(?:perl|ruby|php|lua|node)[0-9.]+$/.test(name)) return name.replace(/[0-9.]+$/, '');
  return name;
}
