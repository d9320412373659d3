/** Something that was brought up and must be taken down again (a socket, a channel, the runtime, a lock). */
export type Closer = (reason: string) => void | Promise<void>;

export interface CloseFailure {
  name: string;
  error: unknown;
}

/**
 * Everything a start brought up, in the order it came up. Each part is pushed as soon as it exists, so a
 * start that fails half-way unwinds exactly what is there; a normal stop unwinds the same stack.
 */
export interface CloserStack {
  push(name: string, close: Closer): void;
  /**
   * Closes every part, last pushed first, each once. One part that fails to close does not keep the others
   * open: its error is collected and returned. Later calls wait for the first and close nothing more.
   */
  closeAll(reason: string): Promise<CloseFailure[]>;
  /** Names of the parts still open, first pushed first. */
  names(): string[];
}

export function createCloserStack(): CloserStack {
  const parts: { name: string; close: Closer }[] = [];
  let closing: Promise<CloseFailure[]> | undefined;
  return {
    push(name, close) {
      // Something that starts after the stack was unwound would never be closed: refuse it loudly.
      if (closing) throw new Error(`cannot register "${name}": the host is already shutting down`);
      parts.push({ name, close });
    },
    closeAll(reason) {
      closing ??= (async () => {
        const failures: CloseFailure[] = [];
        for (let part = parts.pop(); part; part = parts.pop()) {
          try {
            await part.close(reason);
          } catch (error) {
            failures.push({ name: part.name, error });
          }
        }
        return failures;
      })();
      return closing;
    },
    names: () => parts.map((p) => p.name),
  };
}
