import type { Readable, Writable } from 'node:stream';

/**
 * The running agent container as the IPC session drives it: its streams, its timers and its end. `ipc/`
 * owns this shape (it is what a session needs); `containers/` launches processes that have it.
 */
export type ContainerExitReason = 'exited' | 'hard_timeout' | 'idle_timeout' | 'stopped' | 'oom' | 'error';

export interface ContainerExit {
  exitCode: number | null;
  reason: ContainerExitReason;
  detail?: string;
}

export interface ContainerProcess {
  name: string;
  id: string;
  /** The agent's stdin. Ending it closes the container's stdin (StdinOnce); writes after exit are dropped. */
  stdin: Writable;
  stdout: Readable;
  stderr: Readable;
  /** Resets the idle timer (it is also reset by any stdout/stderr output). */
  touch(): void;
  /**
   * Arms the hard and idle timeouts from now. A container launched with `deferTimeouts` waits for its run
   * without them (it may be pre-started long before); otherwise they run from the start and this is a no-op.
   */
  beginRun(): void;
  /** SIGTERM, then SIGKILL after `graceMs` (at once when it is 0); resolves once the container is gone. */
  stop(reason: string, graceMs?: number): Promise<void>;
  /** Resolves (never rejects) when the container has exited and been removed, after its output ended. */
  readonly exited: Promise<ContainerExit>;
}
