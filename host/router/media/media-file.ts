import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { InboundMessage } from '../../channels/channel.ts';

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
 * there may be a symlink an earlier run planted to steer the host's write elsewhere. So each folder on the
 * way is made and then proven a real directory at exactly its place (realpath), and the file is created
 * exclusively (`wx`: never through a symlink of that name) under a temporary name, then renamed, so a run
 * never reads half a file. The remaining window (a running container swapping a folder between the check
 * and the write) needs a run active in the group at that moment, and lands the file at most one folder away.
 */
export async function storeMediaFile(groupDir: string, relPath: string, bytes: Uint8Array): Promise<void> {
  // The group's folder itself is the host's (made here before its first run, if need be); only what is
  // inside it is the containers'.
  await fs.mkdir(groupDir, { recursive: true, mode: 0o755 });
  const root = await fs.realpath(groupDir);
  let dir = root;
  for (const part of path.posix.dirname(relPath).split('/')) {
    dir = path.join(dir, part);
    await fs.mkdir(dir, { mode: 0o755 }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
    const stat = await fs.lstat(dir);
    if (!stat.isDirectory() || (await fs.realpath(dir)) !== dir)
      throw new Error(`${path.relative(root, dir)} in the group folder is not a plain folder`);
  }
  const full = path.join(dir, path.posix.basename(relPath));
  const tmp = `${full}.${crypto.randomBytes(6).toString('hex')}.part`;
  await fs.writeFile(tmp, bytes, { mode: 0o644, flag: 'wx' });
  await fs.rename(tmp, full);
}
