import http from 'node:http';
import type { z } from 'zod';
import {
  consoleEvent,
  postMessageResult,
  type ConsoleEvent,
  type PostMessageBody,
  type PostMessageResult,
} from './local-api.ts';

export class HostUnreachable extends Error {}
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Talks to a running host over its Unix socket. */
export function createLocalClient(socketFile: string) {
  function request(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const req = http.request(
        {
          socketPath: socketFile,
          method,
          path,
          headers: payload
            ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
            : {},
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            try {
              resolve({
                status: res.statusCode ?? 0,
                json: JSON.parse(Buffer.concat(chunks).toString('utf8')),
              });
            } catch {
              reject(new ApiError(res.statusCode ?? 0, 'the host sent an answer that is not JSON'));
            }
          });
          res.on('error', reject);
        },
      );
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') {
          reject(
            new HostUnreachable(
              `the Carapace host is not running (no answer on ${socketFile}); start it with: carapace start`,
            ),
          );
        } else reject(err);
      });
      req.end(payload);
    });
  }

  async function call<T extends z.ZodType>(
    schema: T,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<z.infer<T>> {
    const { status, json } = await request(method, path, body);
    if (status !== 200)
      throw new ApiError(status, (json as { error?: string }).error ?? `host answered ${status}`);
    return schema.parse(json);
  }

  return {
    postMessage(body: PostMessageBody): Promise<PostMessageResult> {
      return call(postMessageResult, 'POST', '/v1/messages', body);
    },
    getJson(path: string): Promise<unknown> {
      return request('GET', path).then(({ status, json }) => {
        if (status !== 200)
          throw new ApiError(status, (json as { error?: string }).error ?? `host answered ${status}`);
        return json;
      });
    },
    /** Streams console events until the connection ends or `signal` aborts; resolves when it ends. */
    events(
      group: string,
      after: number | 'latest',
      onEvent: (e: ConsoleEvent) => void,
      signal: AbortSignal,
    ): Promise<void> {
      return new Promise((resolve, reject) => {
        const req = http.request(
          {
            socketPath: socketFile,
            method: 'GET',
            path: `/v1/events?group=${encodeURIComponent(group)}&after=${after}`,
            signal,
          },
          (res) => {
            if (res.statusCode !== 200) {
              const chunks: Buffer[] = [];
              res.on('data', (c: Buffer) => chunks.push(c));
              res.on('end', () => {
                let message = `host answered ${res.statusCode}`;
                try {
                  message = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { error: string }).error;
                } catch {
                  // keep the status line
                }
                reject(new ApiError(res.statusCode ?? 0, message));
              });
              return;
            }
            let buffered = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => {
              buffered += chunk;
              let nl: number;
              while ((nl = buffered.indexOf('\n')) >= 0) {
                const line = buffered.slice(0, nl);
                buffered = buffered.slice(nl + 1);
                const parsed = consoleEvent.safeParse(JSON.parse(line));
                if (parsed.success) onEvent(parsed.data);
              }
            });
            res.on('end', () => resolve());
            res.on('error', () => resolve());
            res.on('aborted', () => resolve());
          },
        );
        req.on('error', (err: NodeJS.ErrnoException) => {
          if (signal.aborted) return resolve();
          if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') reject(new HostUnreachable(err.message));
          else resolve(); // a dropped connection: the caller reconnects
        });
        req.end();
      });
    },
  };
}

export type LocalClient = ReturnType<typeof createLocalClient>;
