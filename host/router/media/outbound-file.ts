import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileTypeFromBuffer } from 'file-type';
import type { OutboxAttachment } from '../../store/outbox-store.ts';
import { isPlainText } from './media-sniff.ts';

/** A file a run asked to send, read once by the host: what is reviewed is what is sent. */
export interface OutboundFile {
  bytes: Buffer;
  fileName: string;
  mime: string;
  kind: OutboxAttachment['kind'];
  /** The content, when it is plain text: scanned for secrets like the message itself. */
  text?: string;
}

export type ReadOutbound = { ok: true; file: OutboundFile } | { ok: false; reason: string };

export interface OutboundFilesDeps {
  /** The group's folder on the host. */
  groupDir: (groupId: string) => string;
  /** Where the group folder is inside the container (`/workspace/group`): absolute paths must lie under it. */
  containerGroupDir: string;
  /** `[media] max_send_bytes`, read at each send. */
  maxBytes: () => number;
  /** A host-only folder (0700) the approved copies wait in until the outbox sent them. */
  stagingDir: string;
}

const IMAGES = new Set(['png', 'jpg', 'webp', 'gif']);

/**
 * Files a run sends with `message.send`: only from its own group folder (the path is the container's
 * claim: resolved here, symlinks followed, and refused outside the folder), within `[media]
 * max_send_bytes`, typed by their bytes (photo, voice note, or document). A copy goes to a host-only
 * folder once the message is allowed, so the container cannot change the file between the review and the
 * send, or a retry after a restart.
 */
export function createOutboundFiles(deps: OutboundFilesDeps) {
  async function read(groupId: string, claimed: string): Promise<ReadOutbound> {
    const prefix = `${deps.containerGroupDir}/`;
    if (path.posix.isAbsolute(claimed) && !claimed.startsWith(prefix))
      return { ok: false, reason: `${claimed} is not in the group folder (${deps.containerGroupDir})` };
    const relative = claimed.startsWith(prefix) ? claimed.slice(prefix.length) : claimed;
    let real: string;
    let root: string;
    try {
      root = await fs.realpath(deps.groupDir(groupId));
      real = await fs.realpath(path.resolve(root, relative));
    } catch {
      return { ok: false, reason: `there is no file ${claimed} in the group folder` };
    }
    if (!real.startsWith(root + path.sep))
      return { ok: false, reason: `${claimed} is not in the group folder` };
    const stat = await fs.stat(real);
    if (!stat.isFile()) return { ok: false, reason: `${claimed} is not a file` };
    const limit = deps.maxBytes();
    if (stat.size > limit)
      return { ok: false, reason: `${claimed} is larger than ${limit} bytes ([media] max_send_bytes)` };
    if (stat.size === 0) return { ok: false, reason: `${claimed} is empty` };
    const bytes = await fs.readFile(real);
    if (bytes.byteLength > limit)
      return { ok: false, reason: `${claimed} grew past ${limit} bytes while read` };
    const fileName = path.basename(real);
    const type = await fileTypeFromBuffer(bytes);
    if (!type) {
      if (!isPlainText(bytes)) return { ok: false, reason: `the type of ${claimed} is not known` };
      return {
        ok: true,
        file: { bytes, fileName, mime: 'text/plain', kind: 'document', text: bytes.toString('utf8') },
      };
    }
    const kind = IMAGES.has(type.ext) ? 'photo' : type.ext === 'opus' ? 'voice' : 'document';
    return { ok: true, file: { bytes, fileName, mime: type.mime, kind } };
  }

  async function stage(file: OutboundFile): Promise<OutboxAttachment> {
    await fs.mkdir(deps.stagingDir, { recursive: true, mode: 0o700 });
    const copy = path.join(
      deps.stagingDir,
      `${crypto.randomUUID()}-${file.fileName.replace(/[^\w.-]+/g, '_')}`,
    );
    await fs.writeFile(copy, file.bytes, { mode: 0o600, flag: 'wx' });
    return {
      path: copy,
      fileName: file.fileName,
      mime: file.mime,
      kind: file.kind,
      bytes: file.bytes.byteLength,
    };
  }

  return { read, stage };
}

export type OutboundFiles = ReturnType<typeof createOutboundFiles>;
