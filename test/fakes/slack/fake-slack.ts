/**
 * A fake Slack that the official SDK talks to unchanged: the Web API methods the adapter calls over HTTP
 * (`<apiUrl><method>`, form or JSON bodies, bearer tokens checked), file uploads and private downloads,
 * and Socket Mode: apps.connections.open hands out a WebSocket URL on the same server, which says hello and
 * delivers events_api envelopes that the client must acknowledge by envelope_id.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { readMultipart } from '../multipart-form.ts';

export const BOT_TOKEN = 'xoxb-fake-bot-token';
export const APP_TOKEN = 'xapp-fake-app-token';
export const BOT_USER = 'UBOT0001';

export interface SlackPost {
  channel: string;
  ts: string;
  text: string;
  thread_ts?: string;
  files?: { id: string; name: string; bytes: Buffer }[];
}

type Params = Record<string, unknown>;

export interface FakeSlack {
  apiUrl: string;
  calls: { method: string; params: Params }[];
  posts(): SlackPost[];
  deleted(): { channel: string; ts: string }[];
  reactions(channel: string, ts: string): string[];
  /** Delivers a message event in an envelope; resolves once the client acknowledged it. */
  message(event: Params): Promise<void>;
  /** A private file the adapter may download with the bot token. */
  addFile(id: string, bytes: Buffer, meta: { name: string; mimetype: string }): Params;
  /** The next `count` calls of `method` answer `error` (`ok: false`), or an HTTP status when a number. */
  failNext(method: string, error: string | number, count?: number): void;
  /** A conversation the bot is no longer in: every post there is `not_in_channel`. */
  kill(channel: string): void;
  /** Sockets closed and new connections refused, until `up`. */
  down(): void;
  up(): void;
  close(): Promise<void>;
}

export async function startFakeSlack(
  opts: { owner?: string; dmOf?: (user: string) => string } = {},
): Promise<FakeSlack> {
  const calls: FakeSlack['calls'] = [];
  const posts: SlackPost[] = [];
  const deleted: { channel: string; ts: string }[] = [];
  const reactions = new Map<string, string[]>();
  const files = new Map<string, { bytes: Buffer; name: string; mimetype: string }>();
  const uploads = new Map<string, { name: string; bytes?: Buffer }>();
  const failures = new Map<string, { error: string | number; left: number }>();
  const dead = new Set<string>();
  const sockets = new Set<WebSocket>();
  const pendingAcks = new Map<string, () => void>();
  let isDown = false;
  let seq = 0;
  const nextTs = () => `${1_700_000_000 + ++seq}.${String(seq).padStart(6, '0')}`;

  const server = http.createServer((req, res) => void handle(req, res));
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    if (isDown || !req.url?.startsWith('/socket')) {
      socket.destroy();
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.add(ws);
      ws.on('close', () => sockets.delete(ws));
      ws.on('message', (data) => {
        const ack = JSON.parse(String(data)) as { envelope_id?: string };
        if (ack.envelope_id) pendingAcks.get(ack.envelope_id)?.();
      });
      ws.send(JSON.stringify({ type: 'hello', num_connections: 1, connection_info: { app_id: 'AFAKE' } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  async function body(req: http.IncomingMessage): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const c of req) parts.push(c as Buffer);
    return Buffer.concat(parts);
  }

  function paramsOf(raw: Buffer, type: string | undefined): Params {
    const text = raw.toString('utf8');
    if (type?.includes('application/json')) return JSON.parse(text || '{}') as Params;
    return Object.fromEntries(new URLSearchParams(text));
  }

  const send = (res: http.ServerResponse, status: number, value: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value));
  };

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', base);
    const auth = req.headers.authorization ?? '';
    if (url.pathname.startsWith('/files/')) {
      const f = files.get(url.pathname.slice('/files/'.length));
      if (auth !== `Bearer ${BOT_TOKEN}` || !f) return void send(res, 404, { ok: false });
      res.writeHead(200, { 'content-type': f.mimetype });
      res.end(f.bytes);
      return;
    }
    if (url.pathname.startsWith('/upload/')) {
      const u = uploads.get(url.pathname.slice('/upload/'.length));
      if (!u) return void send(res, 404, { ok: false });
      // The SDK posts the bytes as a multipart form's one file field, as Slack's upload URL takes them.
      const raw = await body(req);
      const type = req.headers['content-type'] ?? '';
      if (type.startsWith('multipart/')) {
        const form = await readMultipart(type, raw);
        const part = [...form.values()].find((v): v is File => typeof v !== 'string');
        u.bytes = part ? Buffer.from(await part.arrayBuffer()) : Buffer.alloc(0);
      } else u.bytes = raw;
      res.end('OK');
      return;
    }
    const method = url.pathname.replace(/^\/api\//, '');
    const params = paramsOf(await body(req), req.headers['content-type']);
    calls.push({ method, params });
    if (isDown) return void send(res, 503, { ok: false, error: 'service_unavailable' });
    const expected = method === 'apps.connections.open' ? APP_TOKEN : BOT_TOKEN;
    if (auth !== `Bearer ${expected}`) return void send(res, 200, { ok: false, error: 'invalid_auth' });
    const failure = failures.get(method);
    if (failure && failure.left > 0) {
      failure.left -= 1;
      if (typeof failure.error === 'number') return void send(res, failure.error, { ok: false });
      return void send(res, 200, { ok: false, error: failure.error });
    }
    const ok = (value: Params = {}) => send(res, 200, { ok: true, ...value });
    const fail = (error: string) => send(res, 200, { ok: false, error });
    const channel = String(params.channel ?? params.channel_id ?? '');
    switch (method) {
      case 'auth.test':
        return ok({ user_id: BOT_USER, bot_id: 'BFAKE', team: 'Fake Team', user: 'carapace' });
      case 'apps.connections.open':
        return ok({ url: `${base.replace('http', 'ws')}/socket` });
      case 'conversations.info':
        return channel.startsWith('D')
          ? ok({ channel: { id: channel, is_im: true } })
          : ok({ channel: { id: channel, name: `chan-${channel.toLowerCase()}` } });
      case 'conversations.open':
        return ok({ channel: { id: opts.dmOf?.(String(params.users)) ?? `D${String(params.users)}` } });
      case 'chat.postMessage': {
        if (dead.has(channel)) return fail('not_in_channel');
        const ts = nextTs();
        posts.push({
          channel,
          ts,
          text: String(params.text ?? ''),
          ...(params.thread_ts ? { thread_ts: String(params.thread_ts) } : {}),
        });
        return ok({ channel, ts, message: { ts, text: params.text } });
      }
      case 'chat.update': {
        // Slack edits in place: the message keeps its ts; a deleted or unknown one is message_not_found.
        const ts = String(params.ts);
        const post = posts.find((p) => p.channel === channel && p.ts === ts);
        if (!post || deleted.some((d) => d.channel === channel && d.ts === ts)) return fail('message_not_found');
        if (typeof params.text !== 'string' || params.text === '') return fail('no_text');
        post.text = params.text;
        return ok({ channel, ts, text: post.text });
      }
      case 'chat.delete': {
        const ts = String(params.ts);
        if (
          !posts.some((p) => p.channel === channel && p.ts === ts) ||
          deleted.some((d) => d.channel === channel && d.ts === ts)
        )
          return fail('message_not_found');
        deleted.push({ channel, ts });
        return ok({ channel, ts });
      }
      case 'reactions.add': {
        const key = `${channel}/${String(params.timestamp)}`;
        const list = reactions.get(key) ?? [];
        if (list.includes(String(params.name))) return fail('already_reacted');
        reactions.set(key, [...list, String(params.name)]);
        return ok();
      }
      case 'files.getUploadURLExternal': {
        const id = `F${++seq}`;
        uploads.set(id, { name: String(params.filename) });
        return ok({ upload_url: `${base}/upload/${id}`, file_id: id });
      }
      case 'files.completeUploadExternal': {
        if (dead.has(channel)) return fail('not_in_channel');
        const list = (typeof params.files === 'string' ? JSON.parse(params.files) : params.files) as {
          id: string;
        }[];
        const done = list.map((f) => ({
          id: f.id,
          name: uploads.get(f.id)?.name ?? '',
          bytes: uploads.get(f.id)?.bytes ?? Buffer.alloc(0),
        }));
        const ts = nextTs();
        posts.push({ channel, ts, text: String(params.initial_comment ?? ''), files: done });
        return ok({ files: done.map((f) => ({ id: f.id, name: f.name })) });
      }
      default:
        return fail('unknown_method');
    }
  }

  return {
    apiUrl: `${base}/api/`,
    calls,
    posts: () => posts.filter((p) => !deleted.some((d) => d.channel === p.channel && d.ts === p.ts)),
    deleted: () => [...deleted],
    reactions: (channel, ts) => reactions.get(`${channel}/${ts}`) ?? [],
    async message(event) {
      const ws = [...sockets][0];
      if (!ws) throw new Error('no Socket Mode connection is open');
      const envelopeId = `env-${++seq}`;
      const acked = new Promise<void>((resolve) => pendingAcks.set(envelopeId, resolve));
      ws.send(
        JSON.stringify({
          envelope_id: envelopeId,
          type: 'events_api',
          accepts_response_payload: false,
          payload: { type: 'event_callback', event: { type: 'message', ts: nextTs(), ...event } },
        }),
      );
      await acked;
      pendingAcks.delete(envelopeId);
    },
    addFile(id, bytes, meta) {
      files.set(id, { bytes, ...meta });
      return {
        id,
        name: meta.name,
        mimetype: meta.mimetype,
        size: bytes.length,
        url_private_download: `${base}/files/${id}`,
      };
    },
    failNext(method, error, count = 1) {
      failures.set(method, { error, left: count });
    },
    kill: (channel) => void dead.add(channel),
    down() {
      isDown = true;
      for (const ws of sockets) ws.terminate();
    },
    up() {
      isDown = false;
    },
    async close() {
      for (const ws of sockets) ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
