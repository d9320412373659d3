import path from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { createLocalClient } from '../../channels/local/local-client.ts';
import { loadSecrets } from '../../config/secrets.ts';
import { createSecretScanner } from '../../security/secret-scanner.ts';
import { createLogger } from '../../logging/create-logger.ts';
import { ADMIN_GROUP_ID, ensureDataDirs, startHost } from '../../main.ts';
import { runChat } from '../chat-repl.ts';
import { PROJECT_ROOT, type CliContext } from '../cli-context.ts';
import { productionRunnerFactory } from '../production-runner.ts';

export async function startCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { 'no-console': { type: 'boolean', default: false } } });
  const config = ctx.config();
  const secrets = loadSecrets({ envFile: ctx.paths.envFile, env: ctx.io.env });
  // Read every secret the host will hold before building the scanner: it matches what was read.
  secrets.get(config.provider.api_key_env);
  const scanner = createSecretScanner({ heldSecrets: secrets.held() });
  const redact = scanner.redact;
  // With a console in this terminal, logs go to a file so they never tear through the prompt.
  const interactive = ctx.io.stdin.isTTY === true && !values['no-console'];
  ensureDataDirs(ctx.paths);
  const logFile = path.join(ctx.paths.logsDir, 'carapace.log');
  const logger = createLogger({
    level: config.logging.level,
    redact,
    ...(interactive ? { destination: pino.destination({ dest: logFile, mkdir: true, sync: false }) } : {}),
  });
  for (const w of secrets.warnings) logger.warn(w);

  const host = await startHost({
    paths: ctx.paths,
    config,
    logger,
    redact,
    createRunner: productionRunnerFactory({
      config,
      paths: ctx.paths,
      projectRoot: PROJECT_ROOT,
      secrets,
      scanner,
      onProgress: (line) => ctx.err(`[agent image] ${line}`),
    }),
  });
  let stopping: Promise<void> | undefined;
  const stop = (reason: string) => (stopping ??= host.stop(reason));

  if (interactive) {
    ctx.out(`Carapace is running (logs: ${logFile}). Other terminals can join with: carapace chat`);
    await runChat({
      client: createLocalClient(ctx.paths.socketFile),
      group: ADMIN_GROUP_ID,
      input: ctx.io.stdin,
      output: ctx.io.stdout,
      assistantName: config.assistant.name,
    });
    await stop('console closed');
    return 0;
  }
  ctx.err(`Carapace is running; talk to it with: carapace chat (socket ${ctx.paths.socketFile})`);
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
