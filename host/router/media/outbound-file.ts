import crypto from 'node:crypto';
import path from 'node:path';
import { fileTypeFromBuffer } from 'file-type';
import type { OutboxAttachment } from '../../store/outbox-store.ts';
import { errorCode } from '../../errors/error-code.ts';
import { isGuardedPathError, type GuardedPathProblem } from '../../safe-fs/guarded-path-error.ts';
import { openGuardedRoot, type GuardedFile } from '../../safe-fs/guarded-root.ts';
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

/** What the run is told when the file it named was refused. */
function refusal(claimed: string, problem: GuardedPathProblem, limit: number): string {
  switch (problem) {
    case 'missing':
      return `there is no file ${claimed} in the group folder`;
    case 'escapes-root':
      return `${claimed} is not in the group folder`;
    case 'symlink':
      return `${claimed} is a symlink; send the file itself`;
    case 'linked':
      return `${claimed} has more than one name (a hard link); send a copy of it`;
    case 'too-large':
      return `${claimed} is larger than ${limit} bytes ([media] max_send_bytes)`;
    case 'not-regular':
    case 'not-directory':
      return `${claimed} is not a file`;
  }
}

/**
 * Files a run sends with `message.send`: only from its own group folder (the path is the container's
 * claim: opened once through the guarded root, which refuses a symlink, a hard link or a file whose
 * descriptor lies outside the folder, and read through that descriptor), within `[media]
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
    const limit = deps.maxBytes();
    let read: GuardedFile;
    try {
      const root = await openGuardedRoot(deps.groupDir(groupId));
      read = await root.readFile(relative, { maxBytes: limit });
    } catch (error) {
      if (isGuardedPathError(error)) return { ok: false, reason: refusal(claimed, error.problem, limit) };
      if (errorCode(error) === 'ENOENT')
        return { ok: false, reason: `there is no file ${claimed} in the group folder` };
      // The run is not told why (the error names host paths); the file is not sent.
      return { ok: false, reason: `${claimed} could not be read from the group folder` };
    }
    const bytes = read.bytes;
    if (bytes.byteLength === 0) return { ok: false, reason: `${claimed} is empty` };
    // The last component was no symlink (the guard refuses one), so the name asked for is the file's.
    const fileName = path.posix.basename(path.posix.normalize(relative));
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
    // The staging folder is the host's alone; it goes through the guarded root all the same, so this
    // folder of the router holds no raw file access (test/unit/safe-fs/fs-boundary.test.ts).
    const staging = await openGuardedRoot(deps.stagingDir, { create: { mode: 0o700 } });
    const name = `${crypto.randomUUID()}-${file.fileName.replace(/[^\w.-]+/g, '_')}`;
    await staging.writeFileAtomic(name, file.bytes, { mode: 0o600 });
    return {
      path: path.join(deps.stagingDir, name),
      fileName: file.fileName,
      mime: file.mime,
      kind: file.kind,
      bytes: file.bytes.byteLength,
    };
  }

  return { read, stage };
}

export type OutboundFiles = ReturnType<typeof createOutboundFiles>;
