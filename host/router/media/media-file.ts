import crypto from 'node:crypto';
import path from 'node:path';
import type { InboundMessage } from '../../channels/channel.ts';
import { openGuardedRoot } from '../../safe-fs/guarded-root.ts';

/** A sender's file name made safe to be part of a stored name: letters, digits, "-", "_" and ".". */
function safeBase(fileName: string | undefined, fallback: string): string {
  const base = (fileName ?? '').replace(/\.[A-Za-z0-9]{1,10}$/, '');
  const clean = base
    .replace(/[^A-Za-z0-9_.-]+/g, '-')
    .replace(/^[.-]+|[.-]+$/g, '')
    .slice(0, 60);
  return clean || fallback;
}

/**
 * Where a message's file is stored, relative to the group's folder: `media/<day sent>/<id>-<name>.<ext>`.
 * The id is a hash of the platform's message identity, so a redelivered message names the same file and two
 * chats' message numbers never collide; the extension is the sniffed type's, never the sender's.
 */
export function mediaPath(
  m: Pick<InboundMessage, 'channel' | 'chatId' | 'externalId' | 'sentAt'>,
  kind: string,
  fileName: string | undefined,
  ext: string,
): string {
  const id = crypto
    .createHash('sha256')
    .update(`${m.channel}\0${m.chatId}\0${m.externalId}`)
    .digest('hex')
    .slice(0, 12);
  const day = /^\d{4}-\d{2}-\d{2}/.exec(m.sentAt)?.[0] ?? new Date().toISOString().slice(0, 10);
  return path.posix.join('media', day, `${id}-${safeBase(fileName, kind)}.${ext}`);
}

/**
 * Writes the file under the group's folder, which the group's containers write too: a `media` or day folder
 * there may be a symlink a run planted (or swaps in while the host writes) to steer the host's write
 * elsewhere. The guarded root makes and opens each folder through the one before it, never following a
 * link, and creates the file exclusively under a temporary name inside the folder it opened, then renames
 * it there, so a run never reads half a file and no swap moves the write out of the group folder.
 */
export async function storeMediaFile(groupDir: string, relPath: string, bytes: Uint8Array): Promise<void> {
  // The group's folder itself is the host's (made here before its first run, if need be); only what is
  // inside it is the containers'.
  const root = await openGuardedRoot(groupDir, { create: { mode: 0o755 }, label: 'the group folder' });
  await root.writeFileAtomic(relPath, bytes, { mode: 0o644, dirMode: 0o755 });
}
