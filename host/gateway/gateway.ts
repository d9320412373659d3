import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, type Dispatcher } from 'undici';
import { validateBindAddresses } from './bind-address.ts';
import { allowedModels, upstreamApiBase, type GatewayConfig, type ProviderConfig } from './config.ts';
import { createLiveDayFormatter } from './spend/day.ts';
import { createRequestHandler, type UpstreamEvents } from './proxy/handler.ts';
import { CREDENTIAL_ROUTE_PREFIX, createCredentialRoute } from './credential/credential-route.ts';
import type { CredentialRouteDeps } from './credential/credential-use.ts';
import { gatewayKeyFrom } from './proxy/headers.ts';
import { CREDENTIAL_KEY_PREFIX, createKeyRegistry, type KeyOwner } from './key-registry.ts';
import type { LogLevels } from '../logging/logger.ts';
import { createReviews, type Review, type ReviewSettings } from './review/review.ts';
import { createRunSlots } from './proxy/run-slots.ts';
import { createSpendCap, type CapConfig } from './spend/spend-cap.ts';
import {
  createTranscription,
  type TranscriptionSettings,
  type Transcribe,
} from './transcription/transcription.ts';
import type { UsageStore } from './spend/usage-store.ts';
import { errorMessage } from '../errors/error-message.ts';
import type { Clock } from '../time/clock.ts';
import { sleepOn } from '../time/clock-timers.ts';

export interface GatewayDeps {
  /**
   * Read at each request: caps, prices, allowed models and the size limit of a reloaded config apply to
   * the next one. The port, retry settings and upstream timeout are taken once, at creation.
   */
  config: () => GatewayConfig & Pick<CapConfig, 'accountCap'>;
  provider: ProviderConfig;
  /** The real provider key, read by the host from its environment. Empty for providers without keys. */
  providerApiKey: string;
  usageStore: UsageStore;
  /** Every timer and reading of time in the gateway: the retries' waits, the slow notice, deadlines, days. */
  clock: Clock;
  /** IANA zone of the assistant, read at each request; spend is counted per calendar day there. */
  timezone: () => string;
  logger: LogLevels;
  /** The most output tokens one call may ask for (`[runs].max_output_tokens`); larger asks are clamped. */
  maxOutputTokens: number;
  /**
   * Called once per group and day when a settled request brings its spend to SPEND_WARNING_PERCENT (80) of
   * the cap or past it, with what to tell the owner and the day (in the assistant's zone) it counts on. A
   * request refused at the cap is told to its run (`upstreamEvents.spendCapRefused`), not here.
   */
  onSpendWarning?: (groupId: string, message: string, day: string) => void;
  /** What the host must hear about a run's provider calls (see UpstreamEvents); optional for tests. */
  upstreamEvents?: UpstreamEvents;
  /** Waits between retries; injectable so tests can see the delays without waiting them out. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Upstream HTTP dispatcher; by default the gateway owns an undici Agent and closes it. */
  dispatcher?: Dispatcher;
  /** `[media.transcription]`, read at each voice note; absent: the gateway transcribes nothing. */
  transcription?: () => TranscriptionSettings;
  /** `[security.cop]`'s model and bounds: absent, the gateway makes no reviews (each is refused, so flagged). */
  review?: ReviewSettings;
  /** Secret lookup by variable name: a local transcription server's key. */
  secret?: (name: string) => string | undefined;
  /** The credential routes (`/credentials/<name>/…`); without them, those paths are unknown routes. */
  credentials?: Omit<CredentialRouteDeps, 'dispatcher' | 'logger' | 'clock'>;
}

/** A run's keys: the LLM key stays in the agent; the credential key may go to its commands. */
export interface RunKeys {
  key: string;
  credentialKey: string;
  /** Idempotent: both keys die together, with the run. */
  revoke(): void;
}

export interface ListeningInfo {
  port: number;
  addresses: string[];
}

export interface Gateway {
  /** Binds every address on one port (`port`, else `[gateway].port`, 0 = pick one). Wildcards are refused. */
  listen(addresses: readonly string[], port?: number): Promise<ListeningInfo>;
  issueKey(owner: KeyOwner): RunKeys;
  /** The OpenAI-style base URL a container should use when it reaches the gateway at `address`. */
  baseUrlFor(address: string): string;
  /** Where a container reaches the credential routes at `address` (`…/credentials`). */
  credentialsUrlFor(address: string): string;
  readonly port: number | undefined;
  /** Voice → text for the host, counted against the group's spend cap like its runs' requests. */
  transcribe: Transcribe;
  /** One Cop review for a run, counted against its group's cap and the run's review budget (review/review.ts). */
  review: Review;
  close(): Promise<void>;
}

function hostForUrl(address: string): string {
  return address.includes(':') ? `[${address}]` : address;
}

function listenOn(server: Server, address: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => {
      server.off('listening', onListening);
      reject(new Error(`gateway cannot listen on ${hostForUrl(address)}:${port}: ${error.message}`));
    };
    const onListening = () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen({ host: address, port, exclusive: true });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    server.close(() => resolve());
    // Streams in flight would keep close() waiting for as long as a reply takes.
    server.closeAllConnections();
  });
}

export function createGateway(deps: GatewayDeps): Gateway {
  const dayOf = createLiveDayFormatter(deps.timezone);
  const ownsDispatcher = deps.dispatcher === undefined;
  const dispatcher = deps.dispatcher ?? new Agent({ keepAliveTimeout: 30_000, connect: { timeout: 10_000 } });
  const keys = createKeyRegistry();
  const credentialKeys = createKeyRegistry(undefined, CREDENTIAL_KEY_PREFIX);
  const logger = deps.logger;
  const startConfig = deps.config();
  const spendCap = createSpendCap({
    config: deps.config,
    usageStore: deps.usageStore,
    ...(deps.onSpendWarning ? { onSpendWarning: deps.onSpendWarning } : {}),
    onNotifyError: (error, groupId) =>
      logger.error({ groupId, err: errorMessage(error) }, 'gateway: a spend notice failed'),
  });
  const upstream = {
    dispatcher,
    apiBase: upstreamApiBase(deps.provider),
    timeoutMs: startConfig.upstream_timeout_ms,
    retryAttempts: startConfig.retry_attempts,
    retryBaseMs: startConfig.retry_base_ms,
    retryMaxDelayMs: startConfig.retry_max_delay_ms,
    sleep: deps.sleep ?? sleepOn(deps.clock),
    now: () => deps.clock.now(),
    logger,
  };
  const handler = createRequestHandler({
    config: deps.config,
    provider: deps.provider,
    providerApiKey: deps.providerApiKey,
    allowedModels: () => allowedModels(deps.config(), deps.provider),
    maxOutputTokens: deps.maxOutputTokens,
    keys,
    spendCap,
    runSlots: createRunSlots(),
    usageStore: deps.usageStore,
    dayOf,
    clock: deps.clock,
    logger,
    events: deps.upstreamEvents ?? {
      authRejected: () => undefined,
      slow: () => undefined,
      spendCapRefused: () => undefined,
      providerTimedOut: () => undefined,
    },
    upstream,
  });

  const credentialRoute = deps.credentials
    ? createCredentialRoute({ ...deps.credentials, dispatcher, logger, clock: deps.clock })
    : undefined;
  // Credential routes take only credential keys, and LLM routes only LLM keys: a command holding the one
  // can never call the provider.
  const route = (req: IncomingMessage, res: ServerResponse) => {
    if (credentialRoute === undefined || !(req.url ?? '').startsWith(CREDENTIAL_ROUTE_PREFIX)) {
      handler(req, res);
      return;
    }
    const owner = credentialKeys.verify(gatewayKeyFrom(req.headers));
    if (owner === undefined) {
      logger.warn(
        { remote: req.socket.remoteAddress },
        'gateway: credential request with an invalid or ended run key',
      );
      req.resume();
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          error: { message: 'invalid or expired run key: the run this key belonged to has ended' },
        }),
      );
      return;
    }
    void credentialRoute(req, res, owner).catch((error: unknown) => {
      logger.error({ err: errorMessage(error) }, 'gateway: credential route failed');
      res.destroy();
    });
  };
  const settings = deps.transcription;
  const transcribe: Transcribe = !settings
    ? async () => ({ ok: false, reason: 'transcription is not set up in this host' })
    : createTranscription({
        settings,
        providerApiBase: upstreamApiBase(deps.provider),
        providerApiKey: deps.providerApiKey,
        secret: deps.secret ?? (() => undefined),
        spendCap,
        usageStore: deps.usageStore,
        day: () => dayOf(deps.clock.now()),
        clock: deps.clock,
        dispatcher,
        logger,
      });

  const reviews = deps.review
    ? createReviews({
        settings: deps.review,
        config: deps.config,
        provider: deps.provider,
        providerApiKey: deps.providerApiKey,
        maxOutputTokens: deps.maxOutputTokens,
        upstream,
        spendCap,
        usageStore: deps.usageStore,
        day: () => dayOf(deps.clock.now()),
        logger,
      })
    : undefined;
  const review: Review = reviews
    ? (call) => reviews.review(call)
    : async () => ({ ok: false, refused: 'the Cop has no reviews set up in this gateway' });

  const servers: Server[] = [];
  let boundPort: number | undefined;
  let state: 'idle' | 'listening' | 'closed' = 'idle';

  return {
    async listen(addresses, port) {
      if (state !== 'idle') throw new Error(`gateway.listen called on a gateway that is already ${state}`);
      const checked = validateBindAddresses(addresses);
      state = 'listening';
      let chosen = port ?? startConfig.port;
      try {
        for (const address of checked) {
          const server = createServer({ noDelay: true }, route);
          servers.push(server);
          chosen = await listenOn(server, address, chosen);
        }
      } catch (error) {
        await Promise.all(servers.map(closeServer));
        servers.length = 0;
        state = 'idle';
        throw error;
      }
      boundPort = chosen;
      logger.info({ addresses: checked, port: chosen, provider: deps.provider.kind }, 'gateway: listening');
      return { port: chosen, addresses: checked };
    },
    issueKey(owner) {
      const llm = keys.issue(owner);
      const credential = credentialKeys.issue(owner);
      return {
        key: llm.key,
        credentialKey: credential.key,
        revoke: () => {
          llm.revoke();
          credential.revoke();
          reviews?.forget(owner.runId);
          // The run's spend durable as it ends, not an interval later: readers of the table (`carapace
          // usage` in another process) see a finished run whole.
          deps.usageStore.flush?.();
        },
      };
    },
    baseUrlFor(address) {
      if (boundPort === undefined)
        throw new Error('gateway.baseUrlFor needs a listening gateway: call listen() first');
      return `http://${hostForUrl(address)}:${boundPort}/v1`;
    },
    credentialsUrlFor(address) {
      if (boundPort === undefined)
        throw new Error('gateway.credentialsUrlFor needs a listening gateway: call listen() first');
      return `http://${hostForUrl(address)}:${boundPort}/credentials`;
    },
    get port() {
      return boundPort;
    },
    transcribe,
    review,
    async close() {
      state = 'closed';
      await Promise.all(servers.map(closeServer));
      servers.length = 0;
      if (ownsDispatcher) await dispatcher.destroy();
    },
  };
}
