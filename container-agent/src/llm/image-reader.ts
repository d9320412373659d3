import fs from 'node:fs/promises';
import path from 'node:path';

/** A photo the host stored in the group folder and named in a chat message (protocol `image`). */
export interface ImageRef {
  path: string;
  mime: string;
}

/** Bytes read at most for one image, whatever the host said (it sends only what fits its own limit). */
const MAX_IMAGE_BYTES = 8 * 1024 * 1024;

/**
 * Reads an image the host named as a data URL for an image part, from inside the group folder only (the
 * real path, symlinks resolved, must stay inside it: a run may have replaced the file by a link since).
 * Undefined when it is gone, outside, or too large: the model then reads the photo's text line only.
 */
export function createImageReader(groupDir: string): (image: ImageRef) => Promise<string | undefined> {
  return async (image) => {
    try {
      const root = await fs.realpath(groupDir);
      const real = await fs.realpath(path.resolve(root, image.path));
      if (!real.startsWith(root + path.sep)) return undefined;
      const stat = await fs.stat(real);
      if (!stat.isFile() || stat.size > MAX_IMAGE_BYTES) return undefined;
      return `data:${image.mime};base64,${(await fs.readFile(real)).toString('base64')}`;
    } catch {
      return undefined;
    }
  };
}
