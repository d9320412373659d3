/**
 * A host start that fails after a channel connected, in a process of its own so that what it leaves behind
 * shows: the process must end by itself (nothing keeps the event loop alive), and before it does it reports
 * the failure and whether the connected channel's connection, the sockets and the lock were let go.
 * Run as `node --import tsx test/fakes/failed-start-host.ts`, configured by the CARAPACE_* variables;
 * FAILED_START_RUNNER=production brings up the real agent runtime (Docker) and fails only once a pre-started
 * container of this data folder runs, else the echo runner double is used.
 */
import net from 'node:net';
import path from 'node:path';
import Docker from 'dockerode';
import { startHost } from '../../host/app/host.ts';
import { waitFor } from '../helpers/processes.ts';
import { staticRunner } from '../helpers/static-runner.ts';
import { startProductionHost } from '../../host/app/production-host.ts';
import { HostStartError } from '../../host/app/start-error.ts';
import { EXAMPLE_CONFIG_FILE } from '../../host/cli/cli-context.ts';
import { loadConfig } from '../../host/config/load-config.ts';
import { resolvePaths } from '../../host/config/paths.ts';
import { dataFolderLabel, LABEL_DATA } from '../../host/containers/run/data-folder-label.ts';
import { createLogger } from '../../host/logging/create-logger.ts';
import { acquireHostLock } from '../../host/store/host-lock.ts';
import { createEchoRunner } from './echo-runner.ts';
import { createSocketChannel } from './socket-channel.ts';

export interface FailedStartReport {
  error: string;
  step: string | undefined;
  /** The connection a platform client held to the channel that had connected, closed by its stop. */
  channelConnectionClosed: boolean;
  /** Whether each socket still accepts connections after the failure. */
  channelSocketAnswers: boolean;
  consoleSocketAnswers: boolean;
  lockFree: boolean;
  /** What keeps this process alive right after the failure (process.getActiveResourcesInfo). */
  resources: string[];
}

const paths = resolvePaths({ env: process.env, cwd: process.cwd() });
const config = loadConfig({ configFile: paths.configFile, exampleFile: EXAMPLE_CONFIG_FILE });
const production = process.env.FAILED_START_RUNNER === 'production';
const channelSocket = path.join(paths.dataDir, 'fake-channel.sock');

const answers = (file: string) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect(file);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });

let platformConnection: net.Socket | undefined;
let connectionClosed: Promise<void> | undefined;

const connected = createSocketChannel({
  socketFile: channelSocket,
  deliveriesFile: path.join(paths.dataDir, 'fake-deliveries.jsonl'),
  dieMarker: path.join(paths.dataDir, 'died-once'),
});
const brokenTwin = createSocketChannel({
  name: 'broken',
  socketFile: path.join(paths.dataDir, 'broken.sock'),
  deliveriesFile: path.join(paths.dataDir, 'broken-deliveries.jsonl'),
  dieMarker: path.join(paths.dataDir, 'broken-died'),
});
const broken = {
  ...brokenTwin,
  async start() {
    // The first channel is up: a platform client holds a connection to it, as a chat network would.
    platformConnection = net.connect(channelSocket);
    await new Promise<void>((resolve, reject) => {
      platformConnection!.once('connect', resolve);
      platformConnection!.once('error', reject);
    });
    const held = platformConnection;
    connectionClosed = new Promise((resolve) => held.once('close', () => resolve()));
    if (production) {
      // Fail only once the runtime has a container of this data folder running, so its removal is tested.
      const docker = new Docker();
      const label = `${LABEL_DATA}=${dataFolderLabel(paths.dataDir)}`;
      await waitFor(
        'a running container of this data folder',
        async () =>
          (await docker.listContainers({ filters: { label: [label], status: ['running'] } })).length > 0,
        120_000,
      );
    }
    throw new Error('the broken network refused the bot token');
  },
};

const logDestination = { write: (line: string) => void process.stderr.write(line) };
try {
  if (production) {
    await startProductionHost({
      paths,
      config,
      env: process.env,
      logDestination,
      onProgress: () => undefined,
      extraChannels: [connected, broken],
    });
  } else {
    await startHost({
      paths,
      config,
      createRunner: staticRunner(createEchoRunner()),
      logger: createLogger({ level: 'info', redact: (s) => s, destination: logDestination }),
      redact: (s) => s,
      extraChannels: [connected, broken],
    });
  }
  process.stdout.write(`${JSON.stringify({ error: 'the host started' })}\n`);
} catch (err) {
  let lockFree = false;
  try {
    acquireHostLock(paths.dataDir).release();
    lockFree = true;
  } catch {
    lockFree = false;
  }
  // The close reaches the client a moment after the channel stopped; a bound, so a leak reports instead of hanging.
  let bound: NodeJS.Timeout | undefined;
  const closed = await Promise.race([
    connectionClosed?.then(() => true) ?? false,
    new Promise<false>((r) => (bound = setTimeout(() => r(false), 5_000))),
  ]);
  clearTimeout(bound);
  // Read before this script's own probes below open connections of their own.
  const resources = process.getActiveResourcesInfo();
  const report: FailedStartReport = {
    error: (err as Error).message,
    step: err instanceof HostStartError ? err.step : undefined,
    channelConnectionClosed: closed,
    channelSocketAnswers: await answers(channelSocket),
    consoleSocketAnswers: await answers(paths.socketFile),
    lockFree,
    resources,
  };
  process.stdout.write(`${JSON.stringify(report)}\n`);
}
