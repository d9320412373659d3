import path from 'node:path';
import type { GateVerdict } from '../../../container-agent/src/bash-gate/index.ts';
import type { RunIdentity } from '../decisions.ts';
import type { AuditStore } from '../../store/audit-store.ts';
import { describeTaint, type TaintRegistry } from './taint.ts';

/**
 * Reading a mount that held secrets counts as reading secret data; reading a mount whose folder another
 * group mounts read-write counts as reading untrusted content (that group's runs may have written anything
 * there, and its runs are corrupted from their start). Both are judged the same way, below.
 *
 * Reading a mount that held secrets counts as reading secret data. The secret files themselves are hidden
 * (empty binds), but the files next to them may hold secrets under other names. The mount plan says which
 * mounts held such files (dependency folders excluded, see mount-shadows.ts); this decides which reads
 * reach inside them:
 * - file tools report each real path before they read it (`file.read`); the host checks it against the
 *   plan itself. A path above a secret mount counts too (a recursive grep of /workspace).
 * - commands are reported before they run (`bash.ran`); what a command reads cannot be traced exactly
 *   (globs, `cd`, expansions, programs reading paths from files), so a command counts unless the host can
 *   see it stays away: it is on the local allowlist (so it runs no other program) and no word of it can
 *   name a path inside a secret mount (absolute paths and their globs are compared with the mounts; `..`,
 *   `~`, `$…` and backticks, and a bare `cd`, count as reaching anywhere). Relative paths resolve in the
 *   group folder, which lies in no secret mount; a symlink planted there by an earlier run is the case
 *   this misses.
 */

/** The folder commands run in and relative paths start from (the group folder). */
const COMMAND_CWD = '/workspace/group';

export interface FileReadReport {
  path: string;
  tool: 'read_file' | 'grep' | 'edit_file' | 'read_attachment';
}

/** The secret mount a path lies in, or under which it reads (a parent folder); undefined when neither. */
export function secretMountOf(mounts: readonly string[], p: string): string | undefined {
  const resolved = path.posix.resolve(COMMAND_CWD, p);
  return mounts.find((m) => isWithin(resolved, m) || isWithin(m, resolved));
}

function isWithin(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent === '/' ? '/' : `${parent}/`);
}

/** Characters after which a path may start inside one shell word (`--file=/x`, `@/x`, `a:/x`). */
const PATH_STARTS = /[=@:,]/;
const GLOB = /[*?[{]/;

/** Why a command may read inside a secret mount, or undefined when the host can see it does not. */
export function commandReadsSecretMount(
  mounts: readonly string[],
  command: string,
  verdict: GateVerdict,
): string | undefined {
  if (mounts.length === 0) return undefined;
  if (verdict.class !== 'local') return `the command may run programs that read anywhere (${verdict.reason})`;
  if (/[$`]/.test(command)) return 'the command expands variables or commands, which may name any path';
  if (/(^|[\s;&|(])(cd|pushd|popd)\s*($|[;&|)])/.test(command))
    return 'the command changes to a folder it does not name';
  for (const raw of command.split(/[\s;&|()<>]+/)) {
    const word = raw.replace(/["'\\]/g, '');
    if (word === '') continue;
    if (word.includes('..')) return `${quote(word)} may lead out of the group folder`;
    if (word.startsWith('~')) return `${quote(word)} starts in a home folder`;
    const candidates = [word, ...word.split(PATH_STARTS).slice(1)].filter((c) => c.startsWith('/'));
    for (const candidate of candidates) {
      const glob = candidate.search(GLOB);
      if (glob === -1) {
        const mount = secretMountOf(mounts, candidate);
        if (mount) return `${quote(candidate)} lies in ${mount}`;
        continue;
      }
      // A glob may match anything that starts with its literal part.
      const prefix = candidate.slice(0, glob);
      const mount = mounts.find((m) => m.startsWith(prefix) || isWithin(prefix, m));
      if (mount) return `${quote(candidate)} may match paths in ${mount}`;
    }
  }
  return undefined;
}

function quote(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 79)}…` : text);
}

export interface SecretReadsDeps {
  taint: Pick<TaintRegistry, 'get' | 'markSecret' | 'markCorrupted'>;
  audit: AuditStore;
}

type Kind = 'secret' | 'corruption';

/**
 * Marks runs that read inside a secret mount as secret-tainted, and inside a shared mount as corrupted,
 * with an audit row when the taint grows.
 */
export function createSecretReads({ taint, audit }: SecretReadsDeps) {
  const mark = (identity: RunIdentity, kind: Kind, operation: string, reason: string, details: unknown) => {
    if (taint.get(identity.runId)[kind]) return;
    if (kind === 'secret') taint.markSecret(identity.runId);
    else taint.markCorrupted(identity.runId);
    audit.record({
      runId: identity.runId,
      groupId: identity.group.id,
      operation,
      decision: 'tainted',
      taint: describeTaint(taint.get(identity.runId)),
      reason: `${kind === 'secret' ? 'secret' : 'corruption'} taint: ${reason}`.slice(0, 1000),
      details,
    });
  };
  const lists = (identity: RunIdentity) =>
    [
      { kind: 'secret', mounts: identity.secretMounts, held: 'held secret files' },
      { kind: 'corruption', mounts: identity.sharedMounts ?? [], held: 'another group mounts read-write' },
    ] as const;
  return {
    fileRead(identity: RunIdentity, report: FileReadReport): void {
      for (const { kind, mounts, held } of lists(identity)) {
        const mount = secretMountOf(mounts, report.path);
        if (mount === undefined) continue;
        mark(identity, kind, 'file.read', `${report.tool} read ${report.path} in ${mount}, which ${held}`, {
          path: report.path.slice(0, 2000),
          tool: report.tool,
        });
      }
    },
    commandRan(identity: RunIdentity, command: string, verdict: GateVerdict): void {
      for (const { kind, mounts, held } of lists(identity)) {
        const why = commandReadsSecretMount(mounts, command, verdict);
        if (why === undefined) continue;
        mark(identity, kind, 'bash.read', `${why}; ${mounts.join(', ')} ${held}`, {
          command: command.slice(0, 2000),
        });
      }
    },
  };
}

export type SecretReads = ReturnType<typeof createSecretReads>;
