/**
 * `tar`: only an allowlist of options runs locally. GNU tar runs programs with --checkpoint-action,
 * --to-command, -I/--use-compress-program, -F/--info-script, --rsh-command and --rmt-command, and talks
 * to a remote host when the archive is `host:path`. Every argument must be fixed in the source, because
 * a glob such as `*` can expand to a file named `--checkpoint-action=exec=sh`.
 */
import type { ArgCheck } from './arg-check.ts';
import { firstComputed } from './arg-check.ts';
import { scanOptions } from './option-scan.ts';
import type { OptionSpec, ScannedOption } from './option-scan.ts';
import { quote } from './verdict.ts';
import type { WordInfo } from './rule-types.ts';
import { words } from './word-list.ts';

const TAR_OPTIONS: OptionSpec = {
  allowUnknown: false,
  shortFlags: 'AcdrtuxvzjJapkmoOhPSWwBGiUsn',
  shortWithValue: 'fCTXbg',
  longWithValue: words(`
    file directory exclude exclude-from files-from strip-components owner group mode mtime sort format
    label blocking-factor record-size transform xform listed-incremental newer after-date newer-mtime
    warning suffix
  `),
  // Declaring an optional value as required would swallow the next option unchecked.
  longOptionalValue: ['checkpoint', 'occurrence'],
  longFlags: words(`
    create extract get list append update concatenate catenate diff compare delete verbose gzip gunzip
    ungzip bzip2 xz lzma zstd auto-compress to-stdout keep-old-files skip-old-files overwrite
    overwrite-dir no-same-owner same-owner no-same-permissions preserve-permissions same-permissions
    numeric-owner wildcards no-wildcards anchored no-anchored null recursion no-recursion
    one-file-system dereference hard-dereference ignore-failed-read totals exclude-vcs
    exclude-vcs-ignores exclude-caches exclude-backups posix absolute-names touch unlink-first
    recursive-unlink keep-newer-files show-transformed-names force-local verify sparse incremental
    no-xattrs xattrs no-acls acls no-selinux selinux full-time utc check-links ignore-zeros help version
    usage preserve-order same-order backup
  `),
  deniedShort: {
    I: 'tar -I runs a compression program',
    F: 'tar -F runs a script at the end of each volume',
  },
  deniedLong: {
    'checkpoint-action': 'tar --checkpoint-action runs another program',
    'to-command': 'tar --to-command runs another program',
    'use-compress-program': 'tar --use-compress-program runs another program',
    'info-script': 'tar --info-script runs a script at the end of each volume',
    'new-volume-script': 'tar --new-volume-script runs a script at the end of each volume',
    'rsh-command': 'tar --rsh-command runs a remote shell',
    'rmt-command': 'tar --rmt-command runs a remote tape program',
  },
};

/** Old-style `tar czf out.tgz dir`: letters in the first word, their values taken from the next words. */
function expandOldStyle(args: readonly WordInfo[]): WordInfo[] {
  const first = args[0];
  if (
    first === undefined ||
    first.value === null ||
    first.value.startsWith('-') ||
    !/^[A-Za-z]+$/.test(first.value)
  ) {
    return [...args];
  }
  const rest = args.slice(1);
  const expanded: WordInfo[] = [];
  for (const letter of first.value) {
    expanded.push({ ...first, value: `-${letter}`, prefix: `-${letter}` });
    if ((TAR_OPTIONS.shortWithValue ?? '').includes(letter)) {
      const value = rest.shift();
      if (value !== undefined) expanded.push(value);
    }
  }
  return [...expanded, ...rest];
}

function archiveIsRemote(options: readonly ScannedOption[]): string | null {
  if (options.some((o) => o.name === 'force-local')) return null;
  for (const option of options) {
    if (option.name !== 'f' && option.name !== 'file') continue;
    const archive = option.value ?? '';
    const colon = archive.indexOf(':');
    // GNU tar treats `host:path` as remote when the part before the colon has no slash.
    if (colon !== -1 && !archive.slice(0, colon).includes('/')) {
      return `tar archive ${quote(archive)} names a remote host`;
    }
  }
  return null;
}

export const tarRule: ArgCheck = (command, args) => {
  const computed = firstComputed(command, args);
  if (computed !== null) return computed;
  const scan = scanOptions(command, expandOldStyle(args), TAR_OPTIONS);
  if (scan.finding !== null) return scan.finding;
  const remote = archiveIsRemote(scan.options);
  return remote === null ? null : { reason: remote, network: true };
};
