import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import type { ChannelHost, InboundMessage } from '../../host/channels/channel.ts';
import type { TranscriptionRequest } from '../../host/gateway/transcription/transcription.ts';
import { createIngest } from '../../host/router/ingest.ts';
import { mediaConfigSchema, type MediaConfig } from '../../host/router/media/media-config.ts';
import { createMediaIngest, type Transcribe } from '../../host/router/media/media-ingest.ts';
import { openStore, type Store } from '../../host/store/store.ts';
import { systemClock, type Clock } from '../../host/time/clock.ts';

export interface MediaHostOptions {
  /** `[media]`, parsed as config.toml's would be. */
  media?: Record<string, unknown>;
  /** A file larger than this finds the group folder full. */
  quotaBytes?: number;
  transcribe?: Transcribe;
  groupTranscribes?: boolean;
  /** The download deadline's clock (default: the system clock). */
  clock?: Clock;
}

/**
 * The host's side of a channel for media tests: its real ingest and media step over a real SQLite store
 * (in `dir`) and real group folders, with an admin command step that records what reached it and claims
 * every "approve". Only the transcription service is a function (the gateway's own is tested with the fake
 * provider). The caller adds its groups and starts its channel with `host`.
 */
export function startMediaHost(dir: string, opts: MediaHostOptions = {}) {
  const store: Store = openStore({ file: path.join(dir, 'carapace.db') });
  const commandsAsked: InboundMessage[] = [];
  const transcribed: TranscriptionRequest[] = [];
  const ingest = createIngest({
    store,
    assistantName: () => 'Andy',
    adminCommands: { handle: (m) => (commandsAsked.push(m), /^approve\b/i.test(m.text)) },
    onTriggered: () => undefined,
    logger: pino({ level: 'silent' }),
  });
  const config: MediaConfig = mediaConfigSchema.parse(opts.media ?? {});
  const groupsDir = path.join(dir, 'groups');
  const ingestMedia = createMediaIngest({
    config: () => config,
    groupTranscribes: () => opts.groupTranscribes ?? true,
    store,
    groupDir: (id) => {
      fs.mkdirSync(path.join(groupsDir, id), { recursive: true });
      return path.join(groupsDir, id);
    },
    quotaProblem: async (_id, add) =>
      opts.quotaBytes !== undefined && add > opts.quotaBytes ? 'the group folder is full' : null,
    transcribe: () =>
      opts.transcribe &&
      (async (req) => {
        transcribed.push(req);
        return opts.transcribe?.(req) ?? { ok: false, reason: 'unset' };
      }),
    ingest,
    clock: opts.clock ?? systemClock,
    logger: pino({ level: 'silent' }),
  });
  const host: ChannelHost = {
    ingest,
    ingestMedia,
    onStatus: () => undefined,
    onChatSeen: () => undefined,
    isOwnMessage: () => false,
    onChatMoved: () => undefined,
  };
  const messages = (groupId: string) => store.messages.after(groupId, 0);
  return {
    store,
    host,
    groupsDir,
    commandsAsked,
    transcribed,
    messages,
    /** The `media.inbound` rows among the last 50 audit rows. */
    auditRows: () => store.audit.tail(50).filter((r) => r.operation === 'media.inbound'),
    /** The `count`th message of a group once it is stored, or false. */
    nth: (groupId: string, count = 1) => messages(groupId).length >= count && messages(groupId)[count - 1],
  };
}
