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

export async function startCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { 'no-console': { type: 'boolean', default: false } } });
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
  ensureDataDirs(ctx.paths);
  const logFile = path.join(ctx.paths.logsDir, 'carapace.log');
  // Logs go to data/logs, so they never tear through the console's prompt and `carapace logs` finds them;
  // under systemd (which sets JOURNAL_STREAM) to stderr, which is the journal.
  const toJournal = !interactive && ctx.io.env.JOURNAL_STREAM !== undefined;
  const { host } = await startProductionHost({
    paths: ctx.paths,
    config,
    reload: { start, exampleFile: EXAMPLE_CONFIG_FILE },
    env: ctx.io.env,
    ...(toJournal ? {} : { logDestination: pino.destination({ dest: logFile, mkdir: true, sync: false }) }),
    onProgress: (line) => ctx.err(`[agent image] ${line}`),
  });
  let stopping: Promise<void> | undefined;
  const stop = (reason: string) => (stopping ??= host.stop(reason));

  if (interactive) {
    // The console owns the terminal; a SIGTERM from outside must still stop the host cleanly.
    process.once('SIGTERM', () => void stop('received SIGTERM').then(() => process.exit(0)));
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
    await stop('console closed');
    return 0;
  }
  ctx.err(
    `Carapace is running; talk to it with: npx carapace chat (socket ${ctx.paths.socketFile}); logs: npx carapace logs -f`,
  );
  await new Promise<void>((resolve) => {
    const onSignal = (signal: string) => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      void stop(`received ${signal}`).then(resolve);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
  return 0;
}
