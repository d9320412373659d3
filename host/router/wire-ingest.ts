import type { Logger } from '../logging/logger.ts';
import type { Channel } from '../channels/channel.ts';
import type { HostEvents } from '../store/host-events.ts';
import type { Store } from '../store/store.ts';
import type { GroupQueue } from './group-queue.ts';
import { createIngest, type IngestDeps } from './ingest.ts';
import type { MediaConfig } from './media/media-config.ts';
import { createMediaIngest, type MediaIngestDeps, type Transcribe } from './media/media-ingest.ts';
import type { TriggerSettings } from './trigger-rules.ts';
import { acknowledgeTrigger } from './acknowledge-trigger.ts';
import { createTypingIndicator } from './typing-indicator.ts';
import { systemClock, type Clock } from '../time/clock.ts';

/** The group settings ingest reads for every message (`[groups.<id>]`). */
export interface GroupIngestSettings {
  trigger?: TriggerSettings['trigger'];
  allowed_senders?: readonly string[];
  transcribe?: boolean;
}

export interface IngestWiringDeps {
  store: Store;
  /** Read for every message: a reloaded name, trigger, media setting applies to the next one. */
  live(): {
    assistant: { name: string };
    groups: Record<string, GroupIngestSettings | undefined>;
    media: MediaConfig;
  };
  queue: Pick<GroupQueue, 'isBusy' | 'notify'>;
  channelFor(name: string): Channel | undefined;
  events: HostEvents;
  adminCommands: NonNullable<IngestDeps['adminCommands']>;
  groupDir(groupId: string): string;
  quotaProblem: MediaIngestDeps['quotaProblem'];
  /** The agent runtime: voice goes through its gateway (none: voice notes are not transcribed). */
  runtime: { transcribe?: Transcribe | undefined };
  /** The host's clock: typing is renewed on it (default the real one). */
  clock?: Clock;
  logger: Logger;
}

/**
 * The way in: a message is stored and triggers its group's run (the message is acknowledged where the
 * channel has reactions, and the typing indicator follows the group's state), and a message with a file
 * goes through the media step first.
 */
export function wireIngest(deps: IngestWiringDeps) {
  const { store, live, queue } = deps;
  const typing = createTypingIndicator({
    groups: store.groups,
    isBusy: (id) => queue.isBusy(id),
    channelFor: deps.channelFor,
    clock: deps.clock ?? systemClock,
  });
  deps.events.on('group-state', typing.sync);
  const ingest = createIngest({
    store,
    adminCommands: deps.adminCommands,
    assistantName: () => live().assistant.name,
    triggerSettings: (groupId) => {
      const g = live().groups[groupId];
      return { trigger: g?.trigger ?? 'mention', allowedSenders: g?.allowed_senders };
    },
    onTriggered: (groupId, m) => {
      queue.notify(groupId);
      typing.sync(groupId);
      acknowledgeTrigger(deps.channelFor(m.channel), m);
    },
    logger: deps.logger.child({ subsystem: 'ingest' }),
  });
  const ingestMedia = createMediaIngest({
    config: () => live().media,
    groupTranscribes: (groupId) => live().groups[groupId]?.transcribe ?? true,
    store,
    groupDir: deps.groupDir,
    quotaProblem: deps.quotaProblem,
    transcribe: () => deps.runtime.transcribe,
    ingest,
    clock: deps.clock ?? systemClock,
    logger: deps.logger.child({ subsystem: 'media' }),
  });
  return { ingest, ingestMedia, typing };
}
