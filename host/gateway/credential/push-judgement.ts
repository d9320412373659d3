import { request, type Dispatcher } from 'undici';
import type { Clock } from '../../time/clock.ts';
import { timeoutSignal } from '../../time/clock-timers.ts';
import { credentialHeader, credentialUpstream, type CredentialConfig } from './credential-config.ts';
import type { CredentialUse } from './credential-use.ts';
import { isDeletion, summarizePush, type ParsedPush } from './git-push.ts';
import {
  defaultBranchOf,
  lsRefsRequest,
  parseLsRefs,
  refsUpdatedBy,
  UNRESOLVED,
  type RemoteRefs,
} from './git-refs.ts';

/**
 * A push as the matrix judges it: a write, scanned by its ref names and text, shown by what its commits say
 * and touch, and owed to the owner whatever the taint when it moves a protected ref or cannot be read whole.
 * Refs are judged by what they resolve to on the remote (master -> main moves main); a remote that does not
 * say what they point to (`refs` undefined), or names no default branch when none is configured, protects
 * them all.
 */
export function pushUse(
  credential: CredentialConfig,
  name: string,
  push: ParsedPush,
  refs: RemoteRefs | undefined,
): Omit<CredentialUse, 'credential' | 'kind' | 'trust'> {
  const defaultBranch = refs === undefined ? undefined : defaultBranchOf(refs);
  const protectedRefs = credential.protected_refs ?? (defaultBranch === undefined ? [] : [defaultBranch]);
  const everyRef =
    refs === undefined
      ? 'the remote did not say what its refs point to, so every ref counts as protected'
      : protectedRefs.length === 0 && credential.protected_refs === undefined
        ? "the remote's default branch is unknown, so every branch counts as protected"
        : undefined;
  const matches = (ref: string) =>
    ref === UNRESOLVED ||
    protectedRefs.some((p) => p === ref || (p.endsWith('*') && ref.startsWith(p.slice(0, -1))));
  const touched = push.updates.flatMap((u) => {
    if (refs === undefined || everyRef !== undefined) return [u.ref];
    const hit = refsUpdatedBy(u.ref, refs).find(matches);
    if (hit === undefined) return [];
    return [hit === u.ref ? u.ref : `${hit} (through ${u.ref})`];
  });
  const why =
    push.unreadable > 0
      ? `${push.unreadable} objects of the pack could not be read, so they were not scanned`
      : touched.length === 0
        ? undefined
        : everyRef !== undefined
          ? `${everyRef} (${touched.join(', ')})`
          : `it pushes to protected ${touched.join(', ')}`;
  return {
    write: true,
    scanned: `${push.updates.map((u) => u.ref).join('\n')}\n${push.text}`,
    secretFound: 'the pushed commits contain a secret',
    details: {
      credential: name,
      remote: credential.remote ?? '',
      push: push.updates.map((u) => ({
        ref: u.ref,
        from: u.oldId.slice(0, 12),
        to: isDeletion(u) ? 'deleted' : u.newId.slice(0, 12),
      })),
      // The owner (and the Cop) see what the commits say and touch, not only their hashes.
      ...summarizePush(push),
    },
    ...(why === undefined ? {} : { ownerMust: why }),
  };
}

/** What the remote's refs point to (protocol v2 `ls-refs`), asked of the remote itself; undefined when it does not say. */
export async function askRemoteRefs(
  credential: CredentialConfig,
  value: string,
  dispatcher: Dispatcher,
  clock: Clock,
): Promise<RemoteRefs | undefined> {
  const upstream = credentialUpstream(credential);
  const header = credentialHeader(credential);
  try {
    const answer = await request(`${upstream.origin}${upstream.pathname}/git-upload-pack`, {
      method: 'POST',
      dispatcher,
      headers: {
        [header.name]: header.render(value),
        'user-agent': 'git/carapace',
        'git-protocol': 'version=2',
        'content-type': 'application/x-git-upload-pack-request',
        accept: 'application/x-git-upload-pack-result',
      },
      body: lsRefsRequest(),
      signal: timeoutSignal(clock, 15_000),
    });
    const text = Buffer.from(await answer.body.arrayBuffer());
    return answer.statusCode === 200 ? parseLsRefs(text) : undefined;
  } catch {
    return undefined;
  }
}
