import crypto from 'node:crypto';
import {
  DEFAULT_ORIGIN,
  getMediaKeys,
  getUrlFromDirectPath,
  type MediaType,
  type proto,
} from '@whiskeysockets/baileys';
import { MediaTooLargeError, type InboundMedia, type MediaKind } from '../channel.ts';
import { readWithin } from '../media-download.ts';

/**
 * A file a WhatsApp message carries, as the sender's client declares it. Every field is a claim: the
 * message is end-to-end encrypted, so WhatsApp's servers never checked any of it, the URL included.
 */
export interface WhatsAppMediaSpec {
  kind: MediaKind;
  /** Baileys' name for the file's key family (the HKDF info its media key expands with). */
  keyType: MediaType;
  mediaKey: Uint8Array;
  url?: string;
  directPath?: string;
  /** The SHA-256 of the plain file: a download must match it. */
  fileSha256?: Uint8Array;
  fileName?: string;
  declaredMime?: string;
  declaredBytes?: number;
  durationSec?: number;
}

/** What `mediaOf` finds: the file, the caption the person wrote with it, and the message's context. */
export interface WhatsAppMediaPart {
  spec: WhatsAppMediaSpec;
  caption: string;
  contextInfo: proto.IContextInfo | null | undefined;
}

type Encrypted = {
  mediaKey?: Uint8Array | null;
  url?: string | null;
  directPath?: string | null;
  fileSha256?: Uint8Array | null;
  fileLength?: number | { toNumber(): number } | null;
  mimetype?: string | null;
  contextInfo?: proto.IContextInfo | null;
};

const opt = <K extends string, V>(key: K, value: V | null | undefined) =>
  (value === undefined || value === null || value === '' ? {} : { [key]: value }) as Partial<Record<K, V>>;

function spec(kind: MediaKind, keyType: MediaType, m: Encrypted, extra: Partial<WhatsAppMediaSpec> = {}) {
  const length = m.fileLength === null || m.fileLength === undefined ? undefined : Number(m.fileLength);
  return {
    kind,
    keyType,
    mediaKey: m.mediaKey ?? new Uint8Array(),
    ...opt('url', m.url),
    ...opt('directPath', m.directPath),
    ...opt('fileSha256', m.fileSha256?.length ? m.fileSha256 : undefined),
    ...opt('declaredMime', m.mimetype),
    ...opt('declaredBytes', Number.isFinite(length) ? length : undefined),
    ...extra,
  } satisfies WhatsAppMediaSpec;
}

/**
 * The file of a (normalized) message, if it carries one the host takes in; a sticker stays a text
 * placeholder, as on Telegram. Video is named so the host can say it does not take it.
 */
export function mediaOf(m: proto.IMessage | undefined): WhatsAppMediaPart | undefined {
  if (!m) return undefined;
  const seconds = (s: number | null | undefined) => (s ? { durationSec: s } : {});
  if (m.audioMessage) {
    const a = m.audioMessage;
    // `ptt` is WhatsApp's push-to-talk: a voice note recorded in the chat, not a shared audio file.
    const part = spec(a.ptt ? 'voice' : 'audio', 'audio', a, seconds(a.seconds));
    return { spec: part, caption: '', contextInfo: a.contextInfo };
  }
  if (m.imageMessage) {
    const i = m.imageMessage;
    return { spec: spec('photo', 'image', i), caption: i.caption ?? '', contextInfo: i.contextInfo };
  }
  if (m.documentMessage) {
    const d = m.documentMessage;
    const name = d.fileName?.trim() || d.title?.trim();
    return {
      spec: spec('document', 'document', d, opt('fileName', name)),
      caption: d.caption ?? '',
      contextInfo: d.contextInfo,
    };
  }
  if (m.videoMessage) {
    const v = m.videoMessage;
    const kind = v.gifPlayback ? 'animation' : 'video';
    return {
      spec: spec(kind, 'video', v, seconds(v.seconds)),
      caption: v.caption ?? '',
      contextInfo: v.contextInfo,
    };
  }
  if (m.ptvMessage) {
    const v = m.ptvMessage;
    return {
      spec: spec('video_note', 'ptv', v, seconds(v.seconds)),
      caption: '',
      contextInfo: v.contextInfo,
    };
  }
  return undefined;
}

/** WhatsApp's media hosts (mmg.whatsapp.net, media-*.cdn.whatsapp.net), over HTTPS only. */
const isWhatsAppMediaHost = (u: URL) => u.protocol === 'https:' && u.hostname.endsWith('.whatsapp.net');

/**
 * Where Baileys would fetch the file (its directPath on the URL's host, else the URL), if that is a place
 * the host may fetch from: WhatsApp's media hosts, or the test server `websocket_url` points at. The URL is
 * the sender's claim, so without this check a stranger in a group could make the host GET any address it
 * can reach (a router's admin page, a cloud metadata service) and store the answer where the agent reads it.
 */
export function mediaUrlFor(
  s: Pick<WhatsAppMediaSpec, 'url' | 'directPath'>,
  testServerHost?: string,
): string {
  let url: URL;
  try {
    const fromUrl = s.url ? new URL(s.url) : undefined;
    url = new URL(s.directPath ? getUrlFromDirectPath(s.directPath, fromUrl?.host) : (s.url ?? ''));
  } catch {
    throw new Error('the message gives no usable media address');
  }
  const testServer = testServerHost !== undefined && url.hostname === testServerHost;
  if (!isWhatsAppMediaHost(url) && !testServer)
    throw new Error(`the media address is not a WhatsApp media host (${url.host})`);
  return url.toString();
}

/** WhatsApp appends the first 10 bytes of an HMAC-SHA256 of IV and ciphertext to every encrypted file. */
const MAC_BYTES = 10;
/** AES-CBC pads the plain file with 1 to 16 bytes. */
const PADDING_MAX = 16;
const REDIRECTS_MAX = 3;

/**
 * The download of one file, read within the host's cap, then checked and decrypted with the keys Baileys
 * derives from the message's media key: the MAC must match (a truncated or altered file is an error), and
 * the plain bytes must have the length and SHA-256 the message declares. Fetched here rather than
 * through Baileys' `downloadContentFromMessage` (7.0.0-rc14): it takes no abort signal, checks no MAC,
 * and on a cut connection leaves its stream hanging while the fetch's "terminated" error escapes as an
 * uncaught exception (a hang or a crash, where the host promises a placeholder).
 */
export function whatsappMedia(s: WhatsAppMediaSpec, testServerHost?: string): InboundMedia {
  const { kind, fileName, declaredMime, declaredBytes, durationSec } = s;
  return {
    kind,
    ...opt('fileName', fileName),
    ...opt('declaredMime', declaredMime),
    ...opt('declaredBytes', declaredBytes),
    ...opt('durationSec', durationSec),
    async download(maxBytes, signal) {
      if (s.mediaKey.byteLength !== 32) throw new Error('the message carries no media key');
      if (declaredBytes !== undefined && declaredBytes > maxBytes) throw new MediaTooLargeError(maxBytes);
      const { cipherKey, iv, macKey } = await getMediaKeys(s.mediaKey, s.keyType);
      if (!macKey) throw new Error(`Baileys derives no MAC key for ${s.keyType} files`);
      const res = await fetchChecked(mediaUrlFor(s, testServerHost), testServerHost, signal);
      let encrypted: Uint8Array;
      try {
        encrypted = await readWithin(res, maxBytes + PADDING_MAX + MAC_BYTES);
      } catch (err) {
        throw err instanceof MediaTooLargeError ? new MediaTooLargeError(maxBytes) : err;
      }
      if (encrypted.byteLength < PADDING_MAX + MAC_BYTES || (encrypted.byteLength - MAC_BYTES) % 16 !== 0)
        throw new Error(`the encrypted file is cut short (${encrypted.byteLength} bytes)`);
      const body = encrypted.subarray(0, encrypted.byteLength - MAC_BYTES);
      const mac = crypto.createHmac('sha256', macKey).update(iv).update(body).digest().subarray(0, MAC_BYTES);
      if (!crypto.timingSafeEqual(mac, encrypted.subarray(body.byteLength)))
        throw new Error('the file does not match its media key (cut short or altered)');
      const decipher = crypto.createDecipheriv('aes-256-cbc', cipherKey, iv);
      const bytes = Buffer.concat([decipher.update(body), decipher.final()]);
      if (bytes.byteLength > maxBytes) throw new MediaTooLargeError(maxBytes);
      if (declaredBytes !== undefined && bytes.byteLength !== declaredBytes)
        throw new Error(`the file is ${bytes.byteLength} bytes, its message says ${declaredBytes}`);
      const digest = crypto.createHash('sha256').update(bytes).digest();
      if (s.fileSha256 && !digest.equals(Buffer.from(s.fileSha256)))
        throw new Error('the file does not match the checksum its message declares');
      return bytes;
    },
  };
}

/** GET the file, following a redirect only to a place `mediaUrlFor` would have allowed. */
async function fetchChecked(
  url: string,
  testServerHost: string | undefined,
  signal: AbortSignal,
): Promise<ReadableStream<Uint8Array>> {
  let at = url;
  for (let hop = 0; hop <= REDIRECTS_MAX; hop++) {
    const res = await fetch(at, { signal, redirect: 'manual', headers: { Origin: DEFAULT_ORIGIN } });
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      await res.body?.cancel();
      at = mediaUrlFor({ url: new URL(location, at).toString() }, testServerHost);
      continue;
    }
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      throw new Error(`the media host answered HTTP ${res.status}`);
    }
    return res.body;
  }
  throw new Error('the media host redirected too often');
}
