import type { InboundMedia } from '../channel.ts';
import { readWithin } from '../media-download.ts';
import { mediaKindOf, type SlackFile } from './slack-inbound.ts';

/**
 * A file a message carries, fetched on demand from its private URL with the bot token (Slack serves files
 * only to a token with `files:read`), cut at the host's limit however large Slack said it was.
 */
export function slackMedia(file: SlackFile, botToken: string): InboundMedia {
  const url = file.url_private_download ?? '';
  return {
    kind: mediaKindOf(file),
    ...(file.name !== undefined ? { fileName: file.name } : {}),
    ...(file.mimetype !== undefined ? { declaredMime: file.mimetype } : {}),
    ...(file.size !== undefined ? { declaredBytes: file.size } : {}),
    async download(maxBytes, signal) {
      const res = await fetch(url, {
        headers: { authorization: `Bearer ${botToken}` },
        signal,
        redirect: 'follow',
      });
      if (!res.ok || !res.body) throw new Error(`Slack answered ${res.status} for the file ${file.id}`);
      return readWithin(res.body, maxBytes, file.size);
    },
  };
}
