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

// One call per request: the one-shot hash, not a Hash object (a fifth of the key check's cost).
function digest(value: string): Buffer {
  return hash('sha256', value, 'buffer');
}

/**
 * Keys live only in memory, stored as SHA-256 digests. Verification compares the candidate's digest with
 * every live digest using timingSafeEqual and no early exit, so neither the key's length nor how many
 * leading bytes matched shows in the timing.
 */
export function createKeyRegistry(
  random: (size: number) => Buffer = randomBytes,
  prefix: string = KEY_PREFIX,
): KeyRegistry {
  const live = new Map<symbol, { digest: Buffer; owner: KeyOwner }>();

  return {
    issue(owner) {
      const key = prefix + random(KEY_BYTES).toString('base64url');
      const handle = Symbol(owner.runId);
      live.set(handle, { digest: digest(key), owner: { runId: owner.runId, groupId: owner.groupId } });
      return {
        key,
        revoke: () => {
          live.delete(handle);
        },
      };
    },
    verify(candidate) {
      if (candidate === undefined || candidate.length === 0) return undefined;
      const candidateDigest = digest(candidate);
      let found: KeyOwner | undefined;
      for (const entry of live.values()) {
        if (timingSafeEqual(candidateDigest, entry.digest) && found === undefined) found = entry.owner;
      }
      return found;
    },
    get size() {
      return live.size;
    },
  };
}
