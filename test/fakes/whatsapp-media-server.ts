/**
 * WhatsApp's media host for tests: files encrypted with Baileys' own `encryptedStream` (a random media key,
 * AES-CBC and the 10-byte MAC, as a phone uploads them), served over HTTP, and the fields a media message
 * carries to point at one. crabline serves audio only (its admin inbound takes text or audio); this serves
 * any kind, for messages a test puts into the real Baileys socket's event stream.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { encryptedStream, type MediaType, type WAMediaUploadFunction } from '@whiskeysockets/baileys';
import { seedLinkedAuth, startFakeWhatsApp } from './whatsapp-fake.ts';

/** The fields of an image/audio/document message that say where its file is and how to read it. */
export interface ServedMedia {
  url: string;
  mediaKey: Uint8Array;
  fileSha256: Uint8Array;
  fileEncSha256: Uint8Array;
  fileLength: number;
}

export interface ServeOptions {
  /** Answers with a 302 to this address instead of the file. */
  redirectTo?: string;
  /** Sends only this many bytes of the encrypted file, then cuts the connection (Content-Length says all). */
  cutAfter?: number;
  /** Sends only this many bytes of the encrypted file, then nothing more, keeping the connection open. */
  stallAfter?: number;
}

export interface FakeWhatsAppMedia {
  /** Encrypts `plain` as a phone would for `type` and serves it. */
  put(plain: Buffer, type: MediaType, opts?: ServeOptions): Promise<ServedMedia>;
  /**
   * Baileys' upload step, pointed here: what the client encrypted is served as WhatsApp's media host would
   * serve it (for a test that sends a file and then downloads it as a recipient would).
   */
  upload: WAMediaUploadFunction;
  /** The paths requested so far. */
  requests(): string[];
  close(): Promise<void>;
}

export async function startFakeWhatsAppMedia(): Promise<FakeWhatsAppMedia> {
  const files = new Map<string, { bytes: Buffer; opts: ServeOptions }>();
  const requested: string[] = [];
  const server = http.createServer((req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://x').pathname;
    requested.push(pathname);
    const file = files.get(pathname);
    if (!file) return void res.writeHead(404).end();
    if (file.opts.redirectTo) return void res.writeHead(302, { location: file.opts.redirectTo }).end();
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': file.bytes.length });
    if (file.opts.stallAfter !== undefined)
      return void res.write(file.bytes.subarray(0, file.opts.stallAfter));
    if (file.opts.cutAfter === undefined) return void res.end(file.bytes);
    res.write(file.bytes.subarray(0, file.opts.cutAfter), () => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    async put(plain, type, opts = {}) {
      const enc = await encryptedStream(plain, type);
      const bytes = fs.readFileSync(enc.encFilePath);
      fs.rmSync(enc.encFilePath, { force: true });
      const pathname = `/mms/${type}/${files.size + 1}.enc`;
      files.set(pathname, { bytes, opts });
      return {
        url: `${base}${pathname}`,
        mediaKey: enc.mediaKey,
        fileSha256: enc.fileSha256,
        fileEncSha256: enc.fileEncSha256,
        fileLength: enc.fileLength,
      };
    },
    async upload(encFilePath, { mediaType }) {
      const pathname = `/mms/${mediaType}/${files.size + 1}.enc`;
      files.set(pathname, { bytes: fs.readFileSync(encFilePath), opts: {} });
      // No directPath: one is fetched over HTTPS, and this server speaks plain HTTP.
      return { mediaUrl: `${base}${pathname}`, directPath: '' };
    },
    requests: () => [...requested],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * What a WhatsApp media test starts from: crabline, the media host, and a linked device's auth folder, all
 * under `dir`; `cleanups` gets their closers.
 */
export async function startWhatsAppWithMedia(dir: string, cleanups: (() => Promise<void> | void)[]) {
  const server = await startFakeWhatsApp(dir);
  cleanups.push(() => server.close());
  const files = await startFakeWhatsAppMedia();
  cleanups.push(() => files.close());
  const authDir = path.join(dir, 'whatsapp');
  await seedLinkedAuth(authDir);
  return { server, files, authDir };
}
