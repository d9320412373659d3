import path from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { createLocalClient } from '../../channels/local/local-client.ts';
import { ensureDataDirs } from '../../config/paths.ts';
import { consoleAdminGroup } from '../admin-group.ts';
import { runChat } from '../chat-repl.ts';
import { EXAMPLE_CONFIG_FILE, type CliContext } from '../cli-context.ts';
import { formatProblem } from '../../config/config-error.ts';
import { loadStartConfig } from '../../config/safe-start.ts';
import { startProductionHost } from '../../app/production-host.ts';
import { READY_CHANNEL_ENV, startDetached, type ReadyMessage } from './start-detached.ts';

export async function startCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      'no-console': { type: 'boolean', default: false },
      detach: { type: 'boolean', default: false },
    },
  });
  if (values.detach) return startDetached(ctx);
  // An invalid config.toml with a last good copy starts in safe mode; without one it stops here (exit 2).
  const start = loadStartConfig({ configFile: ctx.paths.configFile, exampleFile: EXAMPLE_CONFIG_FILE });
  const { config } = start.applied;
  if (start.safeMode) {
    ctx.err(
      `SAFE MODE: ${ctx.paths.configFile} is not valid; running on the last good configuration ${start.safeMode.lastGoodFile} (saved ${start.safeMode.savedAt}):`,
    );
    for (const p of start.safeMode.problems) ctx.err(`  - ${formatProblem(p)}`);
    ctx.err('Repair the file (by hand, carapace config set or rollback): the running host picks it up.');
  }
  const interactive = ctx.io.stdin.isTTY === true && !values['no-console'];
  // Taken before the host starts: a terminal that closes during a first start (minutes of image build) must
  // not kill a half set-up host, which would leave its network and firewall chain behind.
  const hangup = watchHangup();
  ensureDataDirs(ctx.paths);
  const logFile = path.join(ctx.paths.logsDir, 'carapace.log');
  // Logs go to data/logs, so they never tear through the console's prompt and `carapace logs` finds them;
  // under systemd (which sets JOURNAL_STREAM) to stderr, which is the journal.
  const toJournal = !interactive && ctx.io.env.JOURNAL_STREAM !== undefined;
  const { host, logger } = await startProductionHost({
    paths: ctx.paths,
    config,
    reload: { start, exampleFile: EXAMPLE_CONFIG_FILE },
    env: ctx.io.env,
    ...(toJournal ? {} : { logDestination: pino.destination({ dest: logFile, mkdir: true, sync: false }) }),
    onProgress: (line) => ctx.err(`[agent image] ${line}`),
    // The web console's Health page runs `carapace doctor`'s checks on request.
    doctor: async () => {
      const { doctorChecks, runChecks } = await import('./doctor-command.ts');
      return runChecks(ctx, doctorChecks());
    },
  });
  let stopping: Promise<void> | undefined;
  const stop = (reason: string) => (stopping ??= host.stop(reason));

  if (interactive) {
    // The console owns the terminal; a SIGTERM from outside must still stop the host cleanly, and so must
    // the terminal going away (SIGHUP): a console without its terminal has nobody to talk to.
    process.once('SIGTERM', () => void stop('received SIGTERM').then(() => process.exit(0)));
    hangup.then(() => void stop('received SIGHUP').then(() => process.exit(0)));
    ctx.out(`Carapace is running (logs: ${logFile}). Other terminals can join with: npx carapace chat`);
    const client = createLocalClient(ctx.paths.socketFile);
    await runChat({
      client,
      group: await consoleAdminGroup(client),
      input: ctx.io.stdin,
      output: ctx.io.stdout,
      assistantName: config.assistant.name,
      quitEffect: 'stops the host',
    });
    hangup.release();
    await stop('console closed');
    return 0;
  }
  ctx.err(
    `Carapace is running; talk to it with: npx carapace chat (socket ${ctx.paths.socketFile}); logs: npx carapace logs -f; stop: npx carapace stop`,
  );
  // Without a console the host outlives its terminal: SIGHUP (the terminal closed, the owner logged out)
  // is logged and ignored, so `start --no-console &` survives a logout as `start --detach` does.
  hangup.then(() =>
    logger.warn({}, 'received SIGHUP (the terminal closed?); the host keeps running: carapace stop ends it'),
  );
  if (ctx.io.env[READY_CHANNEL_ENV] === '1' && process.send) {
    const ready: ReadyMessage = { type: 'ready', pid: process.pid };
    process.send(ready, () => process.disconnect());
  }
  await new Promise<void>((resolve) => {
    const onSignal = (signal: string) => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      void stop(`received ${signal}`).then(resolve);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
  hangup.release();
  return 0;
}

/**
 * Holds SIGHUP from now on (Node's default would end the process on the spot) and hands each one, including
 * one that came before anybody listened, to the handler given by `then`.
 */
function watchHangup(): { then(handler: () => void): void; release(): void } {
  let missed = 0;
  let handler: (() => void) | undefined;
  const onSignal = () => (handler ? handler() : missed++);
  process.on('SIGHUP', onSignal);
  return {
    then(h) {
      handler = h;
      for (; missed > 0; missed--) h();
    },
    release: () => process.off('SIGHUP', onSignal),
  };
}
