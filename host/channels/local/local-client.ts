import fs from 'node:fs';
import http from 'node:http';
import type * as z from 'zod/mini';
import {
  configReloadResult,
  consoleEvent,
  postMessageResult,
  webLoginLink,
  type ConfigReloadResult,
  type ConsoleEvent,
  type PostMessageBody,
  type PostMessageResult,
  type WebLoginLink,
} from './local-api.ts';

export class HostUnreachable extends Error {}
/** The socket accepted the connection but the host did not answer in time (stopped, wedged, swapping). */
export class HostNotAnswering extends Error {}
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface LocalClientOptions {
  socketFile: string;
  /** Where the host wrote its pid, so that a host that does not answer can be named. */
  pidFile?: string;
  /** A live host accepts at once; a refused or absent socket fails immediately anyway. */
  connectTimeoutMs?: number;
  /** Until the answer (or, for the event stream, its first byte) arrives. */
  responseTimeoutMs?: number;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 3_000;
const DEFAULT_RESPONSE_TIMEOUT_MS = 10_000;

/** Talks to a running host over its Unix socket; every call ends, answered or not. */
export function createLocalClient(options: LocalClientOptions | string) {
  const {
    socketFile,
    pidFile,
    connectTimeoutMs = DEFAULT_CONNECT_TIMEOUT_MS,
    responseTimeoutMs = DEFAULT_RESPONSE_TIMEOUT_MS,
  } = typeof options === 'string' ? { socketFile: options } : options;

  function notAnswering(what: string, ms: number): HostNotAnswering {
    const pid = readPid(pidFile);
    const who = pid === undefined ? `the host on ${socketFile}` : `host pid ${pid}`;
    return new HostNotAnswering(
      `${who} is not answering (${what} within ${ms / 1000} s); ` +
        `if it stays so, stop it${pid === undefined ? '' : ` (kill ${pid})`} and start it again`,
    );
  }

  function unreachable(err: NodeJS.ErrnoException): Error {
    if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') {
      return new HostUnreachable(
        `the Carapace host is not running (no answer on ${socketFile}); start it with: carapace start`,
      );
    }
    return err;
  }

  /**
   * Sends one request; `onResponse` takes over once the headers arrived. Connect and response timers are
   * armed here so no caller can forget them: a host that holds the socket but never answers is reported.
   */
  function open(
    method: string,
    path: string,
    payload: string | undefined,
    onResponse: (res: http.IncomingMessage) => void,
    onError: (err: Error) => void,
    signal?: AbortSignal,
  ): void {
    const req = http.request({
      socketPath: socketFile,
      method,
      path,
      headers: payload
        ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
        : {},
      ...(signal ? { signal } : {}),
    });
    let timer = setTimeout(
      () => req.destroy(notAnswering('no connection', connectTimeoutMs)),
      connectTimeoutMs,
    );
    req.on('socket', (socket) => {
      const armResponse = () => {
        clearTimeout(timer);
        timer = setTimeout(
          () => req.destroy(notAnswering('no answer', responseTimeoutMs)),
          responseTimeoutMs,
        );
      };
      if (socket.connecting) socket.once('connect', armResponse);
      else armResponse();
    });
    req.on('response', (res) => {
      clearTimeout(timer);
      onResponse(res);
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      onError(err instanceof HostNotAnswering ? err : unreachable(err));
    });
    req.on('close', () => clearTimeout(timer));
    req.end(payload);
  }

  function request(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
    return new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      open(
        method,
        path,
        payload,
        (res) => {
          // The whole answer is small; a host that starts it and then stalls is as wedged as a silent one.
          const stall = setTimeout(
            () => res.destroy(notAnswering('no complete answer', responseTimeoutMs)),
            responseTimeoutMs,
          );
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            clearTimeout(stall);
            try {
              resolve({
                status: res.statusCode ?? 0,
                json: JSON.parse(Buffer.concat(chunks).toString('utf8')),
              });
            } catch {
              reject(new ApiError(res.statusCode ?? 0, 'the host sent an answer that is not JSON'));
            }
          });
          res.on('error', (err) => {
            clearTimeout(stall);
            reject(err);
          });
        },
        reject,
      );
    });
  }

  /** The host's own words in a refusal, when it sent them. */
  const hostError = (json: unknown, status: number): string =>
    typeof json === 'object' && json !== null && 'error' in json && typeof json.error === 'string'
      ? json.error
      : `host answered ${status}`;

  async function call<T extends z.ZodMiniType>(
    schema: T,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<z.infer<T>> {
    const { status, json } = await request(method, path, body);
    if (status !== 200) throw new ApiError(status, hostError(json, status));
    return schema.parse(json);
  }

  return {
    postMessage(body: PostMessageBody): Promise<PostMessageResult> {
      return call(postMessageResult, 'POST', '/v1/messages', body);
    },
    /** Tells the host that groups changed in the database (removed, edited), so it drops what they made stale. */
    async groupsChanged(): Promise<void> {
      const { status, json } = await request('POST', '/v1/groups/changed', {});
      if (status !== 200) throw new ApiError(status, hostError(json, status));
    },
    /** Asks the running host to read config.toml again and apply it (`carapace config set`, rollback). */
    reloadConfig(): Promise<ConfigReloadResult> {
      return call(configReloadResult, 'POST', '/v1/config/reload');
    },
    /** A one-time sign-in link to the web console (`carapace web login`). */
    webLogin(): Promise<WebLoginLink> {
      return call(webLoginLink, 'POST', '/v1/web/login');
    },
    getJson(path: string): Promise<unknown> {
      return request('GET', path).then(({ status, json }) => {
        if (status !== 200) throw new ApiError(status, hostError(json, status));
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
        open(
          'GET',
          `/v1/events?group=${encodeURIComponent(group)}&after=${after}`,
          undefined,
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
          (err) => {
            if (signal.aborted) return resolve();
            if (err instanceof HostUnreachable || err instanceof HostNotAnswering) reject(err);
            else resolve(); // a dropped connection: the caller reconnects
          },
          signal,
        );
      });
    },
  };
}

export type LocalClient = ReturnType<typeof createLocalClient>;

export function readPid(pidFile: string | undefined): number | undefined {
  if (!pidFile) return undefined;
  try {
    const pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}
