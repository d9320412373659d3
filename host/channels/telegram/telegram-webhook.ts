import crypto from 'node:crypto';
import http from 'node:http';
import type { Update } from 'grammy/types';
import type { Logger } from '../../logging/logger.ts';
import { z } from 'zod';

/** Telegram's updates are small; anything near this is not Telegram. */
export const WEBHOOK_BODY_CAP_BYTES = 1024 * 1024;

const updateShape = z.object({ update_id: z.number().int().nonnegative() }).loose();

export interface WebhookServerDeps {
  /** host:port on loopback, e.g. 127.0.0.1:8443 (the schema allows nothing else). */
  listen: string;
  /** The path Telegram posts to: the path of public_url. */
  path: string;
  secret: string;
  handle(update: Update): Promise<void>;
  logger: Logger;
}

export interface WebhookServer {
  start(): Promise<{ port: number }>;
  stop(): Promise<void>;
}

function sameSecret(given: string | string[] | undefined, expected: string): boolean {
  if (typeof given !== 'string') return false;
  const a = crypto.createHash('sha256').update(given).digest();
  const b = crypto.createHash('sha256').update(expected).digest();
  return crypto.timingSafeEqual(a, b);
}

/**
 * The webhook listener. The secret header is checked before a byte of the body is read (a stranger who
 * found the URL costs us nothing), bodies are capped at 1 MiB, and Telegram gets its 200 only once the
 * update was handled: a failure answers 500 and Telegram delivers the update again.
 */
export function createWebhookServer({
  listen,
  path,
  secret,
  handle,
  logger,
}: WebhookServerDeps): WebhookServer {
  const recent = new Set<number>();
  const server = http.createServer((req, res) => {
    const reject = (status: number, text: string) => {
      res.writeHead(status, { 'content-type': 'text/plain', connection: 'close' }).end(text);
      req.destroy();
    };
    if (req.method !== 'POST' || new URL(req.url ?? '/', 'http://x').pathname !== path)
      return reject(404, 'not found');
    if (!sameSecret(req.headers['x-telegram-bot-api-secret-token'], secret)) {
      logger.warn(
        { remote: req.socket.remoteAddress },
        'webhook request without the right secret token refused',
      );
      return reject(401, 'unauthorized');
    }
    const declared = Number(req.headers['content-length'] ?? '0');
    if (declared > WEBHOOK_BODY_CAP_BYTES) return reject(413, 'too large');
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > WEBHOOK_BODY_CAP_BYTES) return reject(413, 'too large');
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (size > WEBHOOK_BODY_CAP_BYTES) return;
      let update: Update;
      try {
        update = updateShape.parse(JSON.parse(Buffer.concat(chunks).toString('utf8'))) as unknown as Update;
      } catch {
        return reject(400, 'not a Telegram update');
      }
      // Telegram redelivers an update it thinks we missed; the host drops duplicate messages too.
      if (recent.has(update.update_id)) return void res.writeHead(200).end();
      handle(update).then(
        () => {
          recent.add(update.update_id);
          const oldest = recent.values().next();
          if (recent.size > 1000 && !oldest.done) recent.delete(oldest.value);
          res.writeHead(200).end();
        },
        (err: unknown) => {
          logger.error(
            { err, updateId: update.update_id },
            'webhook update failed; Telegram will deliver it again',
          );
          res.writeHead(500).end();
        },
      );
    });
  });
  server.requestTimeout = 30_000;

  return {
    start() {
      const at = listen.lastIndexOf(':');
      const host = listen.slice(0, at).replace(/^\[|\]$/g, '');
      const port = Number(listen.slice(at + 1));
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve({ port: (server.address() as { port: number }).port });
        });
      });
    },
    stop() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
