import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

export interface KeyOwner {
  readonly runId: string;
  readonly groupId: string;
}

export interface IssuedKey {
  /** `gw-` (`cr-` for credential routes) + 256 random bits, base64url. Goes to the agent in run.start; never logged. */
  readonly key: string;
  /** Idempotent. Requests already in flight finish; new ones get 401. */
  revoke(): void;
}

export interface KeyRegistry {
  issue(owner: KeyOwner): IssuedKey;
  /** The owner of a live key, or undefined for unknown, revoked or malformed keys. */
  verify(candidate: string | undefined): KeyOwner | undefined;
  readonly size: number;
}

const KEY_PREFIX = 'gw-';
/** Keys of the credential routes: good for nothing else, so they may be given to the run's commands. */
export const CREDENTIAL_KEY_PREFIX = 'cr-';
const KEY_BYTES = 32;
/** How many leading bytes of a digest index it: 48 bits, a plain number as a Map key. */
const TAG_BYTES = 6;
/** A 48-bit clash is one in trillions per live key; this many in a row means the random source is broken. */
const MAX_DRAWS = 4;

// One call per request: the one-shot hash, not a Hash object (a fifth of the key check's cost).
function digest(value: string): Buffer {
  return hash('sha256', value, 'buffer');
}

function tagOf(keyDigest: Buffer): number {
  return keyDigest.readUIntLE(0, TAG_BYTES);
}

interface LiveKey {
  readonly digest: Buffer;
  readonly owner: KeyOwner;
}

/**
 * Keys live only in memory, stored as SHA-256 digests and found by their digest's first 48 bits, then
 * confirmed with timingSafeEqual over the whole digest. The lookup's timing can only tell whether a
 * candidate's digest starts like a live one's, which nobody can aim at without a SHA-256 preimage; the
 * confirmation neither shows how many bytes matched nor depends on the candidate's length. One digest
 * and one compare per request, however many runs hold keys (comparing against every live digest grew
 * with them). Two live keys never share a tag: issue() draws again in the rare case they would.
 */
export function createKeyRegistry(
  random: (size: number) => Buffer = randomBytes,
  prefix: string = KEY_PREFIX,
): KeyRegistry {
  const live = new Map<number, LiveKey>();

  return {
    issue(owner) {
      let key = '';
      let keyDigest: Buffer | undefined;
      for (
        let draw = 0;
        draw < MAX_DRAWS && (keyDigest === undefined || live.has(tagOf(keyDigest)));
        draw++
      ) {
        key = prefix + random(KEY_BYTES).toString('base64url');
        keyDigest = digest(key);
      }
      if (keyDigest === undefined || live.has(tagOf(keyDigest)))
        throw new Error(
          `the random source gave keys that collide with live ones ${MAX_DRAWS} times in a row; it is not random`,
        );
      const tag = tagOf(keyDigest);
      const entry: LiveKey = {
        digest: keyDigest,
        owner: { runId: owner.runId, groupId: owner.groupId },
      };
      live.set(tag, entry);
      return {
        key,
        revoke: () => {
          if (live.get(tag) === entry) live.delete(tag);
        },
      };
    },
    verify(candidate) {
      if (candidate === undefined || candidate.length === 0) return undefined;
      const candidateDigest = digest(candidate);
      const entry = live.get(tagOf(candidateDigest));
      if (entry === undefined) return undefined;
      return timingSafeEqual(candidateDigest, entry.digest) ? entry.owner : undefined;
    },
    get size() {
      return live.size;
    },
  };
}
