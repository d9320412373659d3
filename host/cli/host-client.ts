import { createLocalClient, type LocalClient } from '../channels/local/local-client.ts';
import { UsageError, type CliContext } from './cli-context.ts';

/** `--timeout <seconds>` as given on the command line: a positive number, or a usage error. */
export function timeoutSeconds(raw: string | undefined): number {
  const seconds = Number(raw);
  if (raw === undefined || !Number.isFinite(seconds) || seconds <= 0)
    throw new UsageError('--timeout must be a positive number of seconds');
  return seconds;
}

/** Connecting takes at most this long even when the command may wait longer for an answer. */
const MAX_CONNECT_MS = 3_000;

/**
 * A client of the running host whose every request is answered within `boundMs`, so a host that holds
 * its socket without answering is named ("host pid N is not answering") instead of waited on.
 */
export function hostClientWithin(ctx: CliContext, boundMs: number): LocalClient {
  return createLocalClient({
    socketFile: ctx.paths.socketFile,
    pidFile: ctx.paths.pidFile,
    connectTimeoutMs: Math.min(boundMs, MAX_CONNECT_MS),
    responseTimeoutMs: boundMs,
  });
}
