import type { DestinationStream } from 'pino';
import type { Logger } from '../logging/logger.ts';
import type { Channel, ChannelDefinition } from '../channels/channel.ts';
import type { CarapacePaths } from '../config/paths.ts';
import type { HostConfig } from '../config/schema.ts';
import { loadSecrets, secretVariablesIn } from '../config/secrets.ts';
import { createLogger } from '../logging/create-logger.ts';
import type { ConfigFileReload } from '../config/wire-config-reload.ts';
import { startHost, type HostDeps, type RunningHost } from './host.ts';
import { createSecretScanner, type SecretScanner } from '../security/secrets/index.ts';
import { PROJECT_ROOT } from '../config/project-files.ts';
import { productionRunnerFactory } from './production-runner.ts';

export interface ProductionHostOptions {
  paths: CarapacePaths;
  /** The configuration to start on; with `reload`, the one `reload.start` holds. */
  config: HostConfig;
  /** Run on config.toml and apply its changes while running, as `carapace start` does. */
  reload?: ConfigFileReload;
  /** Where secrets are looked up besides `<config dir>/.env`. */
  env: NodeJS.ProcessEnv;
  logLevel?: string;
  logDestination?: DestinationStream;
  /** Agent image build progress. */
  onProgress(line: string): void;
  /** Channels built by the caller (tests wrap a real adapter at its platform seam). */
  extraChannels?: Channel[];
  /**
   * The channels the config's accounts are made by (default: every channel Carapace knows); tests give a
   * definition whose adapter reaches its platform through a seam, so accounts stay config-driven end to end.
   */
  channelDefinitions?: readonly ChannelDefinition[];
  /** `carapace doctor`'s checks, for the web console's Health page (given by `carapace start`). */
  doctor?: HostDeps['doctor'];
  /** The project the admin group sees read-only (default: this checkout, as `carapace start` uses). */
  adminProject?: string;
}

/**
 * The host exactly as `carapace start` runs it: secrets read first (so the scanner and the log redactor
 * know them), then the host with real containers behind the real security policy. The demo, the
 * end-to-end tests and the benchmarks start it through here too, so they exercise what users run.
 */
export async function startProductionHost(
  opts: ProductionHostOptions,
): Promise<{ host: RunningHost; scanner: SecretScanner; logger: Logger }> {
  const { paths, config } = opts;
  const secrets = loadSecrets({ envFile: paths.envFile, env: opts.env });
  secrets.get(config.provider.api_key_env);
  // Channel sections name their secrets in `*_env` keys (bot_token_env, webhook.secret_token_env): read
  // them now, so the scanner and the log redactor hold those values before any channel can log or send them.
  for (const name of secretVariablesIn(config.channels)) secrets.get(name);
  // Credentials' values too: one that ever shows up in a message, a log line or a request is caught.
  for (const credential of Object.values(config.credentials)) secrets.get(credential.value_env);
  const scanner = createSecretScanner({ heldSecrets: secrets.held() });
  const logger = createLogger({
    level: opts.logLevel ?? config.logging.level,
    redact: scanner.redact,
    ...(opts.logDestination ? { destination: opts.logDestination } : {}),
  });
  for (const w of secrets.warnings) logger.warn({}, w);
  const host = await startHost({
    paths,
    config,
    logger,
    redact: scanner.redact,
    secret: (name) => secrets.get(name),
    ...(opts.extraChannels ? { extraChannels: opts.extraChannels } : {}),
    ...(opts.channelDefinitions ? { channelDefinitions: opts.channelDefinitions } : {}),
    ...(opts.reload ? { reload: opts.reload } : {}),
    ...(opts.doctor ? { doctor: opts.doctor } : {}),
    createRunner: productionRunnerFactory({
      config,
      paths,
      projectRoot: PROJECT_ROOT,
      ...(opts.adminProject ? { adminProject: opts.adminProject } : {}),
      secrets,
      scanner,
      onProgress: opts.onProgress,
    }),
  });
  return { host, scanner, logger };
}
