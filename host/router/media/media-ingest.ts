import type { Logger } from '../../logging/logger.ts';
import {
  MediaTooLargeError,
  type InboundMedia,
  type InboundMessage,
  type InboundResult,
  type MediaKind,
} from '../../channels/channel.ts';
import { errorMessage } from '../../errors/error-message.ts';
import type { TranscriptionRequest, TranscriptionResult } from '../../gateway/transcription/transcription.ts';
import { fenceStrangerText } from '../../services/untrusted-fence.ts';
import type { MessageMedia } from '../../store/messages-store.ts';
import type { Store } from '../../store/store.ts';
import { groupOf, type IngestExtras } from '../ingest.ts';
import type { MediaConfig } from './media-config.ts';
import { mediaPath, storeMediaFile } from './media-file.ts';
import { sniffMedia } from './media-sniff.ts';
import { timeoutSignal } from '../../time/clock-timers.ts';
import type { Clock } from '../../time/clock.ts';

/** The gateway's transcription (gateway/transcription/transcription.ts); never rejects. */
export type Transcribe = (req: TranscriptionRequest) => Promise<TranscriptionResult>;

export interface MediaIngestDeps {
  /** Read for every message: a reloaded `[media]` applies to the next one. */
  config: () => MediaConfig;
  /** `[groups.<id>] transcribe`, read for every voice note. */
  groupTranscribes: (groupId: string) => boolean;
  store: { groups: Pick<Store['groups'], 'findByChat' | 'admin'> } & {
    messages: Pick<Store['messages'], 'has'>;
    audit: Pick<Store['audit'], 'record'>;
  };
  /** The group's folder on the host. */
  groupDir: (groupId: string) => string;
  /** Why `addBytes` more would put the group's folder over its disk quota, or null. */
  quotaProblem: (groupId: string, addBytes: number) => Promise<string | null>;
  /** Unset when the runtime has no gateway (a host without an LLM provider): voice is then not transcribed. */
  transcribe: () => Transcribe | undefined;
  /** The host's one ingest (router/ingest.ts). */
  ingest: (m: InboundMessage, extras?: IngestExtras) => InboundResult;
  /** The download deadline's time (tests pass a fake one). */
  clock: Clock;
  logger: Logger;
}

const KIND_WORDS: Record<MediaKind, string> = {
  voice: 'voice note',
  audio: 'audio',
  photo: 'photo',
  document: 'document',
  video: 'video',
  video_note: 'video message',
  sticker: 'sticker',
  animation: 'animation',
};

/** Kinds the host downloads; the rest are named only. */
const DOWNLOADED = ['voice', 'audio', 'photo', 'document'] as const;
type DownloadedKind = (typeof DOWNLOADED)[number];
const isDownloaded = (k: MediaKind): k is DownloadedKind => (DOWNLOADED as readonly string[]).includes(k);

const MB = 1024 * 1024;
const size = (n: number) =>
  n >= MB ? `${(n / MB).toFixed(1)} MB` : `${Math.max(1, Math.round(n / 1024))} KB`;
const clock = (s: number) => `${Math.floor(s / 60)}:${String(Math.round(s % 60)).padStart(2, '0')}`;

/** A sender's file name in a placeholder: one short line without the characters of a fence or bracket. */
const shownName = (name: string) =>
  name
    .replace(/[\s<>[\]]+/g, ' ')
    .trim()
    .slice(0, 80);

/** "[voice note, 0:04", "[document report.pdf": the head every placeholder starts with. */
function head(media: InboundMedia): string {
  const parts = [KIND_WORDS[media.kind]];
  if (media.fileName) parts[0] = `${parts[0]} ${shownName(media.fileName)}`;
  if (media.durationSec !== undefined) parts.push(clock(media.durationSec));
  return `[${parts.join(', ')}`;
}

type Fetched = { ok: true; bytes: Uint8Array } | { ok: false; reason: string };

/**
 * Takes in a message that carries a file: downloads it within `[media] max_bytes`, decides its real type
 * from the bytes, stores it in the group's folder (`media/<date>/…`, within the group's disk quota),
 * transcribes a voice note through the gateway, and hands the message to the one ingest with a line that
 * says what the file is and where it lies, or why it was not taken ("[voice note, 3:10, not stored: too
 * large …]"). Every outcome is an audit row; nothing is dropped silently, and nothing here throws.
 *
 * Whose words: a transcript is the voice's, and a voice note from anyone but the owner is untrusted like a
 * forwarded stranger's text (fenced, and the group corrupted). A message with media is never an admin
 * command or an approval, whatever its caption or transcript says (ingest.ts).
 */
export function createMediaIngest(deps: MediaIngestDeps) {
  const { store, logger } = deps;

  async function fetchWithin(media: InboundMedia, limit: number, timeoutMs: number): Promise<Fetched> {
    if (limit === 0)
      return { ok: false, reason: `${KIND_WORDS[media.kind]} files are turned off ([media.max_bytes])` };
    if (media.declaredBytes !== undefined && media.declaredBytes > limit)
      return { ok: false, reason: `too large (${size(media.declaredBytes)}, the limit is ${size(limit)})` };
    try {
      const bytes = await media.download(limit, timeoutSignal(deps.clock, timeoutMs));
      if (bytes.byteLength === 0) return { ok: false, reason: 'the file is empty' };
      return { ok: true, bytes };
    } catch (err) {
      if (err instanceof MediaTooLargeError) return { ok: false, reason: `too large (over ${size(limit)})` };
      return { ok: false, reason: `it could not be downloaded (${errorMessage(err)})` };
    }
  }

  async function transcribeIfWanted(
    groupId: string,
    media: InboundMedia,
    bytes: Uint8Array,
    mime: string,
    relPath: string,
  ): Promise<TranscriptionResult> {
    const config = deps.config().transcription;
    if (!config.enabled) return { ok: false, reason: 'transcription is off ([media.transcription] enabled)' };
    if (!deps.groupTranscribes(groupId))
      return { ok: false, reason: 'transcription is off for this group ([groups] transcribe)' };
    if (media.durationSec !== undefined && media.durationSec > config.max_seconds)
      return { ok: false, reason: `too long (the limit is ${clock(config.max_seconds)})` };
    const transcribe = deps.transcribe();
    if (!transcribe) return { ok: false, reason: 'no transcription service is running' };
    return transcribe({
      groupId,
      audio: bytes,
      mime,
      fileName: relPath.slice(relPath.lastIndexOf('/') + 1),
      durationSec: media.durationSec,
    });
  }

  return async function ingestMedia(m: InboundMessage & { media: InboundMedia }): Promise<InboundResult> {
    const { media, ...plain } = m;
    const group = groupOf(store, m);
    // Not a group's message (nothing downloaded for a chat nobody registered), or one stored already.
    if (!group || store.messages.has(m.channel, m.chatId, m.externalId)) return deps.ingest(plain);
    const caption = m.text.trim();
    const record: MessageMedia = {
      kind: media.kind,
      senderId: m.senderId,
      status: 'refused',
      ...(media.fileName ? { fileName: media.fileName } : {}),
      ...(media.durationSec !== undefined ? { durationSec: media.durationSec } : {}),
      ...(media.declaredBytes !== undefined ? { bytes: media.declaredBytes } : {}),
    };
    let line: string;
    let transcript: string | undefined;
    try {
      const outcome = await take(group.id, m, media, record);
      line = outcome.line;
      transcript = outcome.transcript;
    } catch (err) {
      // A bug or a full disk must not lose the message: it is stored with the reason.
      record.reason = `it could not be stored (${errorMessage(err)})`;
      line = `${head(media)}, not stored: ${record.reason}]`;
      logger.error({ err, groupId: group.id }, 'a media file could not be taken in');
    }
    store.audit.record({
      groupId: group.id,
      operation: 'media.inbound',
      decision: record.status,
      reason: record.reason ?? null,
      details: { ...record, channel: m.channel, chatId: m.chatId, externalId: m.externalId },
    });
    const ownerSpoke = m.fromOwner || m.senderIsOwner === true;
    const strangerVoice = transcript !== undefined && !ownerSpoke && m.origin.kind === 'own';
    const spoken =
      transcript === undefined
        ? ''
        : strangerVoice
          ? `\n${fenceStrangerText(`the transcript of a voice note ${m.senderName} sent`, transcript, 24 * 1024)}`
          : `\n[transcript]\n${transcript}`;
    const text = `${line}${spoken}${caption ? `\n${caption}` : ''}`;
    return deps.ingest({ ...plain, text }, { media: record, strangerWords: strangerVoice });
  };

  async function take(
    groupId: string,
    m: InboundMessage,
    media: InboundMedia,
    record: MessageMedia,
  ): Promise<{ line: string; transcript?: string }> {
    const refuse = (reason: string) => {
      record.reason = reason;
      return { line: `${head(media)}, not stored: ${reason}]` };
    };
    if (!isDownloaded(media.kind)) return refuse(`${KIND_WORDS[media.kind]} files are not supported`);
    const config = deps.config();
    const fetched = await fetchWithin(media, config.max_bytes[media.kind], config.download_timeout_ms);
    if (!fetched.ok) return refuse(fetched.reason);
    const { bytes } = fetched;
    record.bytes = bytes.byteLength;
    const sniffed = await sniffMedia(media.kind, bytes, media.fileName);
    if (!sniffed.ok) return refuse(sniffed.reason);
    record.mime = sniffed.mime;
    const over = await deps.quotaProblem(groupId, bytes.byteLength);
    if (over) return refuse(over);
    const relPath = mediaPath(m, media.kind, media.fileName, sniffed.ext);
    await storeMediaFile(deps.groupDir(groupId), relPath, bytes);
    record.status = 'stored';
    record.path = relPath;
    const stored = `${head(media)}, ${size(bytes.byteLength)}, ${sniffed.mime}, in the group folder at ${relPath}`;
    if (sniffed.category !== 'audio') return { line: `${stored}]` };
    const heard = await transcribeIfWanted(groupId, media, bytes, sniffed.mime, relPath);
    if (!heard.ok) {
      record.reason = `not transcribed: ${heard.reason}`;
      return { line: `${stored}, ${record.reason}]` };
    }
    record.transcribed = true;
    return { line: `${stored}, transcribed]`, transcript: heard.text };
  }
}
