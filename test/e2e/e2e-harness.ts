/**
 * End-to-end harness: a fake OpenAI-compatible provider and a real host wired like `carapace start`
 * (productionRunnerFactory: real Docker containers, the real gateway and security policy) on a fresh config
 * and data folder, driven through the real `carapace` CLI. It records what Docker started, what the host
 * logged and what the provider received, and removes everything again (host, containers, network, files).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import { stringify } from 'smol-toml';
import type { Channel, ChannelDefinition } from '../../host/channels/channel.ts';
import { EXAMPLE_CONFIG_FILE } from '../../host/cli/cli-context.ts';
import { startProductionHost } from '../../host/app/production-host.ts';
import {
  dataFolderLabel,
  gatewayNetworkName,
  LABEL_DATA,
} from '../../host/containers/run/data-folder-label.ts';
import { LABEL_GROUP } from '../../host/containers/run/container-spec.ts';
import { removeGatewayFirewall } from '../../host/containers/network/network-host-firewall.ts';
import { loadStartConfig } from '../../host/config/safe-start.ts';
import { resolvePaths, type CarapacePaths } from '../../host/config/paths.ts';
import type { HostConfig } from '../../host/config/schema.ts';
import type { RunningHost } from '../../host/app/host.ts';
import {
  startFakeProvider,
  type FakeProvider,
  type FakeRequest,
  type Responder,
} from '../fakes/fake-provider.ts';
import { groupIdOf } from '../fakes/e2e-responders.ts';
import { runCli, waitFor, type CliResult } from '../helpers/processes.ts';

type Section = Exclude<keyof HostConfig, 'groups'>;

export interface E2eHostOptions {
  /** config.toml sections, merged key by key over the harness defaults (e.g. `{ runs: { max_attempts: 1 } }`). */
  config?: Partial<Record<Section, Record<string, unknown>>>;
  /** The provider's answer when nothing is scripted (default: echo the last user message). */
  responder?: Responder;
  /** What the provider's transcription route hears in an audio file (default: "(speech)"). */
  transcribe?: (audio: Buffer) => string;
  /** Further variables for `<config dir>/.env` (a channel's bot token). */
  secrets?: Record<string, string>;
  /** Channels besides the console, built at each (re)start once the folders are known (a real adapter wrapped at its seam). */
  channels?: (paths: CarapacePaths) => Promise<Channel[]>;
  /**
   * The definitions the config's `[channels]` accounts are made by, built at each (re)start once the
   * folders are known (a WhatsApp definition whose sockets go through a seam; its logins seeded there).
   */
  channelDefinitions?: (paths: CarapacePaths) => Promise<readonly ChannelDefinition[]>;
  /**
   * The admin group's read-only project (default: this checkout). A test that plants files there uses a
   * folder of its own, so admin runs of other test files running beside it never see them.
   */
  adminProject?: string;
}

/** A container lifecycle event of this host's containers, as Docker reported it. */
export interface ContainerEvent {
  action: string;
  name: string;
  group: string;
  at: number;
}

export interface OutboxRow {
  id: number;
  runId: number | null;
  key: string;
  text: string;
  status: string;
}

export interface RunRow {
  id: number;
  status: string;
  attempt: number;
  givenThrough: number;
  ackedThrough: number;
  replied: boolean;
  exitReason: string | null;
}

export interface E2eHost {
  readonly fake: FakeProvider;
  /** The real provider key: only the host holds it (read from `<config dir>/.env`). */
  readonly providerKey: string;
  readonly paths: CarapacePaths;
  /** CARAPACE_CONFIG_DIR and CARAPACE_DATA_DIR, for the CLI. */
  readonly env: NodeJS.ProcessEnv;
  /** The running host (a new one after `restart`). */
  readonly host: RunningHost;
  /** Stops the host and starts a new one on the same config and data folder, as a restart would. */
  restart(): Promise<void>;
  readonly docker: Docker;
  readonly events: readonly ContainerEvent[];
  /** `carapace <args>` against this host, as a separate process. */
  cli(args: string[]): Promise<CliResult>;
  /** Registers local groups through the real CLI; throws with its message when one fails. */
  addLocalGroups(...ids: string[]): Promise<void>;
  /** `carapace send --group <group> "<text>"`: resolves when the CLI exits (it prints the replies). */
  send(group: string, text: string, timeoutS?: number): Promise<CliResult>;
  /** Everything the host logged so far (debug level, including the agents' stderr), as written. */
  logText(): string;
  /** The host's log lines with this `msg`, parsed. */
  logEntries(msg: string): Record<string, unknown>[];
  /** Names of this host's containers Docker started, oldest first. */
  started(group?: string): string[];
  /** Waits until a container of `group` runs and returns its `docker inspect`. */
  runningContainer(group: string, timeoutMs?: number): Promise<Docker.ContainerInspectInfo>;
  outbox(group: string): OutboxRow[];
  runs(group: string): RunRow[];
  /** The stored id of the message with exactly this text. */
  messageId(group: string, text: string): number;
  /** Provider requests made for `group` (identified by its system prompt). */
  requestsOf(group: string): FakeRequest[];
  /** Resolves with the first provider request (from index `from`) that satisfies `match`. */
  waitForRequest(match: (r: FakeRequest) => boolean, from?: number): Promise<FakeRequest>;
  stop(): Promise<void>;
}

function mergeSections(
  base: Record<string, Record<string, unknown>>,
  extra: E2eHostOptions['config'] = {},
): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const key of new Set([...Object.keys(base), ...Object.keys(extra)]))
    out[key] = { ...base[key], ...(extra as Record<string, Record<string, unknown>>)[key] };
  return out;
}

/** test/helpers/processes.ts's `waitFor` with the longer wait a whole host needs. */
export function eventually<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  return waitFor(what, check, timeoutMs);
}

export async function startE2eHost(options: E2eHostOptions = {}): Promise<E2eHost> {
  const docker = new Docker();
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-e2e-')));
  const env = { CARAPACE_CONFIG_DIR: path.join(dir, 'config'), CARAPACE_DATA_DIR: path.join(dir, 'data') };
  const paths = resolvePaths({ env, cwd: dir });
  const providerKey = `sk-e2e-${crypto.randomBytes(24).toString('hex')}`;
  const suffix = crypto.randomBytes(4).toString('hex');
  // A network (and so a firewall chain) of its own: hosts sharing one gateway network replace each other's
  // firewall rules, and test files run side by side.
  const networkPrefix = `carapace-e2e-${suffix}`;
  const logs: string[] = [];
  const events: ContainerEvent[] = [];
  let fake: FakeProvider | undefined;
  let host: RunningHost | undefined;
  let eventStream: (NodeJS.ReadableStream & { destroy?: () => void }) | undefined;
  const dataLabel = dataFolderLabel(paths.dataDir);
  // The runtime appends the data folder's id to the configured prefix.
  const gatewayNetwork = gatewayNetworkName(networkPrefix, paths.dataDir);

  const cleanup = async () => {
    await host?.stop('end of the e2e test file').catch(() => undefined);
    await fake?.close().catch(() => undefined);
    eventStream?.destroy?.();
    const leftovers = await docker
      .listContainers({ all: true, filters: { label: [`${LABEL_DATA}=${dataLabel}`] } })
      .catch(() => []);
    for (const c of leftovers)
      await docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined);
    await removeGatewayFirewall(docker, gatewayNetwork).catch(() => undefined);
    await docker
      .getNetwork(gatewayNetwork)
      .remove()
      .catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  };

  const echo = process.env.CARAPACE_E2E_LOG === '1';
  // As `carapace start` does: config.toml, or its last good copy in safe mode, applied again when it changes.
  const boot = async () => {
    const start = loadStartConfig({ configFile: paths.configFile, exampleFile: EXAMPLE_CONFIG_FILE });
    const extraChannels = options.channels ? await options.channels(paths) : undefined;
    const channelDefinitions = options.channelDefinitions
      ? await options.channelDefinitions(paths)
      : undefined;
    return startProductionHost({
      paths,
      config: start.applied.config,
      reload: { start, exampleFile: EXAMPLE_CONFIG_FILE },
      ...(extraChannels ? { extraChannels } : {}),
      ...(channelDefinitions ? { channelDefinitions } : {}),
      ...(options.adminProject ? { adminProject: options.adminProject } : {}),
      // The host's own environment does not hold the key: it comes from .env like a real installation.
      env: {},
      logLevel: 'debug',
      logDestination: {
        write(line: string) {
          logs.push(line);
          if (echo) process.stderr.write(line);
        },
      },
      onProgress: (line: string) => logs.push(`[agent image] ${line}\n`),
    });
  };

  try {
    fake = await startFakeProvider({
      apiKey: providerKey,
      ...(options.responder ? { responder: options.responder } : {}),
      ...(options.transcribe ? { transcribe: options.transcribe } : {}),
    });
    fs.mkdirSync(env.CARAPACE_CONFIG_DIR, { recursive: true, mode: 0o700 });
    const secrets = Object.entries(options.secrets ?? {}).map(([k, v]) => `${k}=${v}\n`);
    fs.writeFileSync(paths.envFile, [`E2E_PROVIDER_KEY=${providerKey}\n`, ...secrets].join(''), {
      mode: 0o600,
    });
    const sections = mergeSections(
      {
        assistant: { name: 'Andy' },
        provider: { base_url: fake.openaiBaseUrl, api_key_env: 'E2E_PROVIDER_KEY', model: 'fake-model' },
        // The fake model costs nothing: priced at 0, or the spend cap would count it at the dearest known
        // price and a long suite could trip the default cap (gateway-spend-cap.test.ts sets its own prices).
        gateway: {
          retry_base_ms: 50,
          prices: { 'fake-model': { input_per_mtok_usd: 0, output_per_mtok_usd: 0 } },
        },
        containers: { gateway_network: networkPrefix, stop_grace_ms: 500 },
        // Suites count the containers each run starts; pre-starting (test/e2e/prestart.test.ts) adds others.
        runs: { retry_base_ms: 200, prestart: { count: 0 } },
      },
      options.config,
    );
    fs.writeFileSync(paths.configFile, stringify(sections));
    eventStream = (await docker.getEvents({
      filters: { type: ['container'], label: [`${LABEL_DATA}=${dataLabel}`] },
    })) as NodeJS.ReadableStream & { destroy?: () => void };
    let pending = '';
    eventStream.on('data', (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl).trim();
        pending = pending.slice(nl + 1);
        if (!line) continue;
        const e = JSON.parse(line) as {
          Action?: string;
          status?: string;
          Actor?: { Attributes?: Record<string, string> };
        };
        const attributes = e.Actor?.Attributes ?? {};
        events.push({
          action: e.Action ?? e.status ?? '',
          name: attributes.name ?? '',
          group: attributes[LABEL_GROUP] ?? '',
          at: Date.now(),
        });
      }
    });
    eventStream.on('error', () => undefined);

    ({ host } = await boot());
  } catch (err) {
    await cleanup();
    throw err;
  }

  let openHost = host;
  const openFake = fake;
  let db = openHost.store.db;
  const send = (group: string, text: string, timeoutS = 90) =>
    runCli(['send', '--group', group, '--timeout', String(timeoutS), text], env);

  return {
    fake: openFake,
    providerKey,
    paths,
    env,
    get host() {
      return openHost;
    },
    async restart() {
      await openHost.stop('restarted by the test');
      host = undefined;
      ({ host: openHost } = await boot());
      host = openHost;
      db = openHost.store.db;
    },
    docker,
    events,
    cli: (args) => runCli(args, env),
    async addLocalGroups(...ids) {
      for (const res of await Promise.all(
        ids.map((id) => runCli(['groups', 'add', id, '--channel', 'local'], env)),
      )) {
        if (res.code !== 0) throw new Error(`groups add failed: ${res.stderr}`);
      }
    },
    send,
    logText: () => logs.join(''),
    logEntries: (msg) =>
      logs
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((entry) => entry.msg === msg),
    started: (group) =>
      events
        .filter((e) => e.action === 'start' && (group === undefined || e.group === group))
        .map((e) => e.name),
    async runningContainer(group, timeoutMs = 30_000) {
      const found = await eventually(
        `a running container of group ${group}`,
        async () =>
          (
            await docker.listContainers({
              filters: {
                label: [`${LABEL_DATA}=${dataLabel}`, `${LABEL_GROUP}=${group}`],
                status: ['running'],
              },
            })
          )[0],
        timeoutMs,
      );
      return docker.getContainer(found.Id).inspect();
    },
    outbox: (group) =>
      db
        .prepare(
          'SELECT id, run_id AS runId, idempotency_key AS key, text, status FROM outbox WHERE group_id = ? ORDER BY id',
        )
        .all(group) as OutboxRow[],
    runs: (group) =>
      (
        db
          .prepare(
            `SELECT id, status, attempt, given_through AS givenThrough, acked_through AS ackedThrough,
                    replied, exit_reason AS exitReason FROM runs WHERE group_id = ? ORDER BY id`,
          )
          .all(group) as (Omit<RunRow, 'replied'> & { replied: number })[]
      ).map((r) => ({ ...r, replied: r.replied === 1 })),
    messageId(group, text) {
      const row = db
        .prepare('SELECT id FROM messages WHERE group_id = ? AND text = ? ORDER BY id DESC LIMIT 1')
        .get(group, text) as { id: number } | undefined;
      if (!row) throw new Error(`no stored message "${text}" in group ${group}`);
      return row.id;
    },
    requestsOf: (group) => openFake.requests.filter((r) => groupIdOf(r.body) === group),
    async waitForRequest(match, from = 0) {
      for (let seen = from; ;) {
        const all = await openFake.waitForRequests(seen + 1);
        const hit = all.slice(from).find(match);
        if (hit) return hit;
        seen = all.length;
      }
    },
    stop: cleanup,
  };
}
