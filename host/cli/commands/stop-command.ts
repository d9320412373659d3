import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { readPid } from '../../channels/local/local-client.ts';
import { hostIsRunning } from '../../store/host-lock.ts';
import { UsageError, type CliContext } from '../cli-context.ts';

/**
 * `carapace stop`: the host on this data folder gets SIGTERM, the same clean stop as Ctrl+C or
 * `systemctl stop` (runs ended, containers, the gateway network and its firewall chain removed), and the
 * command waits until the host let go of the data folder's lock: that, not the pid, is the proof it stopped.
 */
export async function stopCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { timeout: { type: 'string', default: '60' } } });
  const timeoutS = Number(values.timeout);
  if (!Number.isFinite(timeoutS) || timeoutS <= 0)
    throw new UsageError('--timeout must be a number of seconds');
  const { dataDir, pidFile } = ctx.paths;
  if (!hostIsRunning(dataDir)) {
    ctx.out(`No Carapace host is running on ${dataDir}; nothing to stop.`);
    return 0;
  }
  const pid = readPid(pidFile);
  if (pid === undefined) {
    ctx.err(
      `A host holds ${dataDir} but its pid file ${pidFile} is missing or unreadable; stop it where it runs (Ctrl+C in its console, or systemctl stop carapace).`,
    );
    return 1;
  }
  process.kill(pid, 'SIGTERM');
  ctx.out(`Sent SIGTERM to the Carapace host (pid ${pid}); waiting for it to stop…`);
  const started = Date.now();
  while (hostIsRunning(dataDir)) {
    if (Date.now() - started > timeoutS * 1000) {
      ctx.err(
        `The host (pid ${pid}) is still stopping after ${timeoutS} s (its log: carapace logs). ` +
          `To force it: kill -KILL ${pid}, then carapace cleanup removes what it left behind.`,
      );
      return 3;
    }
    // Nothing to wait on across processes but the lock itself; a tenth of a second is invisible here.
    await sleep(100);
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  ctx.out(
    `The host (pid ${pid}) stopped after ${seconds} s: its runs ended and it removed its containers, Docker network and firewall chain (carapace doctor lists anything left).`,
  );
  return 0;
}
