import type Docker from 'dockerode';
import type { Logger } from '../logging/logger.ts';
import type { HostConfig } from '../config/schema.ts';
import type { CarapacePaths } from '../config/paths.ts';
import type { CredentialRouteDeps } from '../gateway/index.ts';
import type { NewOutboxItem } from '../store/outbox-store.ts';
import type { HostHandlerDeps } from '../ipc/host-handlers.ts';
import type { Scheduler } from '../scheduler/scheduler.ts';
import type { TaintRegistry } from '../security/taint/taint.ts';
import type { ServiceTool } from '../../container-agent/src/protocol.ts';
import type { GroupRecord } from '../store/groups-store.ts';
import type { FinalFailures } from '../router/final-failures.ts';
import type { Store } from '../store/store.ts';
import type { UsageStore } from '../gateway/spend/usage-store.ts';
import type { Review } from '../gateway/index.ts';
import type { RunnerRuntime } from './host.ts';

/** The security decisions the runtime delegates (the security subsystem implements them). */
export type RunPolicy = Pick<
  HostHandlerDeps,
  'bashCheck' | 'bashRan' | 'fileRead' | 'callService' | 'reviewMessage' | 'reviewMutation' | 'config'
>;

export interface AgentRuntimeDeps {
  docker: Docker;
  /** This host's containers carry it (the MCP servers' too, started before the runtime); made here when absent. */
  hostInstanceId?: string;
  config: HostConfig;
  /** The configuration running now: what applies without a restart is read from it at each run or request. */
  live: () => HostConfig;
  paths: CarapacePaths;
  /** This checkout: the agent's source, bundled into the image. */
  projectRoot: string;
  /** The project the admin group sees read-only (default: `projectRoot`). */
  adminProject?: string;
  store: Store;
  /** The host's usage store (usage-settlements.ts); absent, the gateway writes each settlement at once. */
  usage?: UsageStore;
  /** The real provider key (empty for keyless local servers); lives only in host memory. */
  providerApiKey: string | undefined;
  /** Secret lookup by variable name (a local transcription server's key). */
  secret?: (name: string) => string | undefined;
  policy: RunPolicy;
  /** What each run has read; tool results with strangers' text add to it. */
  taint: Pick<TaintRegistry, 'get' | 'markCorrupted' | 'markSecret'>;
  scheduler: Scheduler;
  /** Stores a host notice in the outbox and wakes its delivery. */
  enqueueNotice(item: NewOutboxItem): void;
  /** A notice for the owner in every admin chat (or those `[admin] notify` names). */
  notifyOwner(key: string, text: string): void;
  /** Releases what the security layer holds for a run (its taint, its pending approvals). */
  onRunEnded(runId: number): void;
  /** What makes a run's failure final (a denied message, a provider that refuses the key). */
  finalFailures: FinalFailures;
  /** Channel formatting rules for the agent's prompt, by channel name. */
  formattingFor(channel: string): string;
  /** The tools of the host's MCP servers a group's run is offered (listed as the container starts). */
  serviceToolsFor?(group: GroupRecord): Promise<ServiceTool[]>;
  /** Throws, saying why, when a group cannot be registered on that channel and chat (register_group). */
  checkRegistration(channel: string, chatId: string): void;
  /** Image build progress, for the person waiting at the terminal. */
  onProgress(line: string): void;
  /** The credential routes' decisions and the values behind `value_env` (the gateway serves the routes). */
  credentials?: {
    policy: Pick<CredentialRouteDeps, 'gate' | 'record' | 'signalFor'>;
    secret(envName: string): string | undefined;
  };
  logger: Logger;
}

/** The runtime, and the Cop's way to the provider: through its gateway (absent when nothing runs). */
export interface AgentRuntime extends RunnerRuntime {
  review?: Review;
}
