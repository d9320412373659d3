import { readPktLines } from './git-push.ts';

/**
 * What a remote's refs point to, asked with protocol v2's `ls-refs` (`symrefs`): a push names refs, but the
 * remote updates what they resolve to, so `refs/heads/master -> refs/heads/main` (kept after a rename,
 * allowed by self-hosted forges) moves main. Protocol v0's advertisement names only HEAD's target, which is
 * why v2 is asked.
 */
export interface RemoteRefs {
  /** Symbolic ref → the ref it names, HEAD included. */
  symrefs: ReadonlyMap<string, string>;
}

const pkt = (payload: string) => `${(payload.length + 4).toString(16).padStart(4, '0')}${payload}`;

/** The body of `POST …/git-upload-pack` (with `Git-Protocol: version=2`) that lists every ref and its target. */
export function lsRefsRequest(): Buffer {
  return Buffer.from(
    `${pkt('command=ls-refs\n')}0001${pkt('symrefs\n')}${pkt('ref-prefix HEAD\n')}${pkt('ref-prefix refs/\n')}0000`,
    'latin1',
  );
}

/** Reads an `ls-refs` answer: `<id> <ref>[ symref-target:<ref>]…` lines up to a flush. */
export function parseLsRefs(answer: Buffer): RemoteRefs {
  const symrefs = new Map<string, string>();
  for (const line of readPktLines(answer, 0).lines) {
    const [id, ref, ...attributes] = line.toString('utf8').replace(/\n$/, '').split(' ');
    if (!id || !ref || !/^([0-9a-f]{40,64}|unborn)$/.test(id))
      throw new Error(`not an ls-refs line: ${JSON.stringify(line.toString('latin1').slice(0, 200))}`);
    const target = attributes.find((a) => a.startsWith('symref-target:'))?.slice('symref-target:'.length);
    if (target) symrefs.set(ref, target);
  }
  return { symrefs };
}

/** How deep a chain of symbolic refs is followed; git itself stops at 5. */
const MAX_DEPTH = 5;

/**
 * Every ref an update of `ref` changes: the name itself and each ref it resolves to. A chain deeper than
 * git follows, or a loop, yields what was seen so far plus the marker `(unresolved)`, which a caller treats
 * as protected.
 */
export function refsUpdatedBy(ref: string, remote: RemoteRefs): string[] {
  const seen = [ref];
  let current = ref;
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    const next = remote.symrefs.get(current);
    if (next === undefined) return seen;
    if (seen.includes(next)) break;
    seen.push(next);
    current = next;
  }
  return [...seen, UNRESOLVED];
}

export const UNRESOLVED = '(unresolved)';

/** The branch the remote's HEAD names (its default branch), when it names one. */
export function defaultBranchOf(remote: RemoteRefs): string | undefined {
  return remote.symrefs.get('HEAD');
}
