/**
 * Why a path under a guarded root was refused. Each kind is a way a container that writes the folder could
 * steer the host somewhere else, or make it wait: the caller words it for whoever asked.
 */
export type GuardedPathProblem =
  /** Nothing there (or it vanished while the host looked). */
  | 'missing'
  /** The path, or what the opened descriptor really is, lies outside the root. */
  | 'escapes-root'
  /** The last component is a symlink: never followed, wherever it points. */
  | 'symlink'
  /** Not a regular file (a folder, a FIFO that would block the read, a device, a socket). */
  | 'not-regular'
  /** Not a folder where one was needed (a file on the way, or a file where a folder was asked for). */
  | 'not-directory'
  /** A file with more than one name: a hard link may alias a file outside the root. */
  | 'linked'
  /** Larger than the caller's limit. */
  | 'too-large';

export class GuardedPathError extends Error {
  constructor(
    readonly problem: GuardedPathProblem,
    /** The path as asked for, relative to the root. */
    readonly relPath: string,
    message: string,
  ) {
    super(message);
    this.name = 'GuardedPathError';
  }
}

export function isGuardedPathError(error: unknown): error is GuardedPathError {
  return error instanceof GuardedPathError;
}
