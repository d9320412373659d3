import { spawn, type SpawnOptions } from 'node:child_process';

export interface ExecResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last lines of stdout and stderr together, for error messages. */
  tail: string[];
}

/**
 * Runs a program to completion, handing each output line (stdout and stderr) to `onLine`.
 * Never throws for a non-zero exit: callers decide what a failure means.
 */
export function execLines(
  command: string,
  args: readonly string[],
  options: { onLine?: (line: string) => void; spawn?: SpawnOptions; tailLines?: number } = {},
): Promise<ExecResult> {
  const tailLines = options.tailLines ?? 30;
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options.spawn, stdio: ['ignore', 'pipe', 'pipe'] });
    const tail: string[] = [];
    const feed = (stream: NodeJS.ReadableStream | null) => {
      let pending = '';
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        pending += chunk;
        let newline: number;
        while ((newline = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, newline).replace(/\r$/, '');
          pending = pending.slice(newline + 1);
          tail.push(line);
          if (tail.length > tailLines) tail.shift();
          options.onLine?.(line);
        }
      });
      stream?.on('end', () => {
        if (pending) {
          tail.push(pending);
          if (tail.length > tailLines) tail.shift();
          options.onLine?.(pending);
        }
      });
    };
    feed(child.stdout);
    feed(child.stderr);
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, tail }));
  });
}
