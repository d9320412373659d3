/**
 * A host process for crash and integration tests: the production wiring (startHost) with the echo runner
 * double and the socket channel. Run as `node --import tsx test/fakes/fake-runner-host.ts`; configured by
 * the same CARAPACE_* variables as the real host. It is not reachable from `carapace start`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { EXAMPLE_CONFIG_FILE } from '../../host/cli/cli-context.ts';
import { loadConfig } from '../../host/config/load-config.ts';
import { resolvePaths } from '../../host/config/paths.ts';
import { createLogger } from '../../host/logging/create-logger.ts';
import { startHost } from '../../host/app/host.ts';
import { staticRunner } from '../helpers/static-runner.ts';
import { createEchoRunner } from './echo-runner.ts';
import { createSocketChannel } from './socket-channel.ts';

const paths = resolvePaths({ env: process.env, cwd: process.cwd() });
const config = loadConfig({ configFile: paths.configFile, exampleFile: EXAMPLE_CONFIG_FILE });
const logger = createLogger({ level: 'info', redact: (s) => s });
const dieMarker = path.join(paths.dataDir, 'died-once');
const host = await startHost({
  paths,
  config,
  // Before the socket channel's planned crash, "[until-restart]" runs stay in flight.
  createRunner: staticRunner(createEchoRunner({ holding: () => !fs.existsSync(dieMarker) })),
  logger,
  redact: (s) => s,
  extraChannels: [
    createSocketChannel({
      socketFile: path.join(paths.dataDir, 'fake-channel.sock'),
      deliveriesFile: path.join(paths.dataDir, 'fake-deliveries.jsonl'),
      dieMarker,
    }),
  ],
});
process.stdout.write('ready\n');
process.on('SIGTERM', () => void host.stop('SIGTERM').then(() => process.exit(0)));
