import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { waitFor } from '../helpers/processes.ts';
import { readMultipart } from './multipart-form.ts';

/**
 * A fake Telegram Bot API: a real HTTP server that the real grammY client talks to. It covers what
 * @openclaw/crabline's server does not: raw updates of any kind (callback queries, my_chat_member,
 * captions, replies, bots), 429 `retry_after`, `migrate_to_chat_id`, privacy mode on, 409 conflicts, a
 * stalled long poll, and "can't parse entities". Everything the bot calls is recorded.
 */

export interface ApiCall {
  method: string;
  params: Record<string, unknown>;
  at: number;
}

interface Failure {
  error_code: number;
  description: string;
  parameters?: Record<string, unknown>;
}

export interface FakeTelegramOptions {
  token?: string;
  botId?: number;
  username?: string;
  /** Privacy mode on: getMe says can_read_all_group_messages = false. */
  privacy?: boolean;
  /** Called just before a getUpdates answer that carries updates is written (benchmarks time from here). */
  onUpdatesAnswered?(updateIds: number[]): void;
}

type Update = Record<string, unknown> & { update_id: number };

export interface FakeTelegram {
  apiRoot: string;
  token: string;
  botId: number;
  username: string;
  calls: ApiCall[];
  /** Messages the bot sent (sendMessage), in order. */
  sent(): {
    chat_id: number;
    text: string;
    message_thread_id?: number;
    parse_mode?: string;
    reply_markup?: unknown;
    message_id: number;
  }[];
  /** Queues an update; `update_id` is assigned. Returns it. */
  push(update: Record<string, unknown>): number;
  /** A message update from a user in a chat. */
  message(m: {
    chat: { id: number; type: 'private' | 'group' | 'supergroup'; title?: string; is_forum?: boolean };
    from: { id: number; first_name?: string; is_bot?: boolean; username?: string };
    text?: string;
    caption?: string;
    thread?: number;
    entities?: unknown[];
    extra?: Record<string, unknown>;
  }): { updateId: number; messageId: number };
  /** `from` forwards into `chat` a message that `author` wrote (Bot API `forward_origin` of type user). */
  forward(m: {
    chat: { id: number; type: 'private' | 'group' | 'supergroup'; title?: string };
    from: { id: number; first_name?: string };
    text: string;
    author: { id: number; first_name: string };
  }): { updateId: number; messageId: number };
  /**
   * A message carrying a file: `bytes` is served by getFile and the file route. `truncate` cuts the body
   * short of its Content-Length (a broken download); `declaredSize` overrides the size the update declares.
   */
  media(m: {
    chat: { id: number; type: 'private' | 'group' | 'supergroup'; title?: string };
    from: { id: number; first_name?: string };
    kind: 'voice' | 'audio' | 'photo' | 'document' | 'video';
    bytes: Uint8Array;
    fileName?: string;
    mimeType?: string;
    duration?: number;
    caption?: string;
    truncate?: boolean;
    declaredSize?: number;
  }): { updateId: number; messageId: number; fileId: string };
  /** The owner sends /start in their private chat (it becomes an admin chat); resolves once the bot answered. */
  linkOwner(ownerId: number): Promise<void>;
  /** The file paths the bot downloaded, in order. */
  downloads(): string[];
  /** The bot's messages it deleted (deleteMessage), in order. */
  deleted(): { chat_id: number; message_id: number }[];
  /** The bot's edits of its own messages (editMessageText), in order; `sent()` shows each message's latest text. */
  edits(): { chat_id: number; message_id: number; text: string }[];
  /** The emoji the bot's reaction on a message shows now (setMessageReaction), none when it has none. */
  reactions(chatId: number, messageId: number): string[];
  /** Files the bot sent (sendPhoto, sendVoice, sendDocument), in order. */
  sentFiles(): {
    method: string;
    chat_id: number;
    fileName: string;
    bytes: Buffer;
    caption?: string;
    message_id: number;
  }[];
  /** The next `times` calls of a method fail with this Bot API error. */
  failNext(method: string, failure: Failure, times?: number): void;
  /** Sends to `from` now answer 400 with migrate_to_chat_id = to, and a migration message is queued. */
  migrate(from: number, to: number, title?: string): void;
  /** The next getUpdates never answers (until the client gives up on it). */
  stallNextPoll(): void;
  setPrivacy(on: boolean): void;
  /** Telegram unreachable: open connections are cut and every request fails until `up`. */
  down(): void;
  up(): void;
  /** How many getUpdates were in flight at the same time, at most. */
  maxConcurrentPolls(): number;
  /** The offsets getUpdates was called with. */
  offsets(): number[];
  waitFor<T>(probe: () => T | undefined | false, timeoutMs?: number): Promise<T>;
  close(): Promise<void>;
}

/** Some of the emoji Telegram offers as reactions (its list is fixed; others answer REACTION_INVALID). */
const REACTION_EMOJI = new Set(['👍', '👎', '❤', '🔥', '🤔', '👀', '✍', '👌', '🙏', '😁', '🎉']);

export async function startFakeTelegram(opts: FakeTelegramOptions = {}): Promise<FakeTelegram> {
  const token = opts.token ?? '123456:fake-telegram-token';
  const botId = opts.botId ?? 777000111;
  const username = opts.username ?? 'carapace_test_bot';
  let privacy = opts.privacy ?? false;
  const calls: ApiCall[] = [];
  const reactionsOn = new Map<string, string[]>();
  const deletedMessages: { chat_id: number; message_id: number }[] = [];
  const editedMessages: { chat_id: number; message_id: number; text: string }[] = [];
  const updates: Update[] = [];
  let nextUpdateId = 1;
  const nextMessageId = new Map<number, number>();
  const failures = new Map<string, { failure: Failure; left: number }[]>();
  const migrated = new Map<number, number>();
  let stallNext = false;
  let unreachable = false;
  let activePolls = 0;
  let maxPolls = 0;
  const offsets: number[] = [];
  let waiter: ((reason: 'update' | 'conflict') => void) | undefined;
  let webhook: { url: string; secret?: string } | undefined;
  const sentMessages: ReturnType<FakeTelegram['sent']> = [];
  const sockets = new Set<Socket>();
  const files = new Map<string, { path: string; bytes: Uint8Array; truncate: boolean }>();
  const downloaded: string[] = [];
  const sentFiles: ReturnType<FakeTelegram['sentFiles']> = [];

  const takeMessageId = (chat: number) => {
    const id = nextMessageId.get(chat) ?? 1;
    nextMessageId.set(chat, id + 1);
    return id;
  };
  const wake = () => {
    waiter?.('update');
    if (webhook) void deliverWebhook();
  };

  async function deliverWebhook(): Promise<void> {
    while (webhook && updates.length > 0) {
      const u = updates[0] as Update;
      const res = await fetch(webhook.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(webhook.secret ? { 'x-telegram-bot-api-secret-token': webhook.secret } : {}),
        },
        body: JSON.stringify(u),
      }).catch(() => undefined);
      if (!res?.ok) return;
      updates.shift();
    }
  }

  const bot = () => ({
    id: botId,
    is_bot: true,
    first_name: 'Carapace Test',
    username,
    can_join_groups: true,
    can_read_all_group_messages: !privacy,
    supports_inline_queries: false,
  });

  function takeFailure(method: string): Failure | undefined {
    const list = failures.get(method);
    const head = list?.[0];
    if (!head) return undefined;
    head.left -= 1;
    if (head.left <= 0) list.shift();
    return head.failure;
  }

  async function getUpdates(p: Record<string, unknown>, req: http.IncomingMessage): Promise<unknown> {
    const offset = Number(p.offset ?? 0);
    offsets.push(offset);
    // Confirmed updates are forgotten, as Telegram does.
    while (updates.length > 0 && (updates[0] as Update).update_id < offset) updates.shift();
    if (stallNext) {
      stallNext = false;
      await new Promise<void>((r) => req.socket.once('close', () => r()));
      return [];
    }
    const ready = () => updates.filter((u) => u.update_id >= offset).slice(0, Number(p.limit ?? 100));
    if (ready().length > 0 || !Number(p.timeout)) return ready();
    // A second poller knocks the first off, as Telegram does.
    waiter?.('conflict');
    const reason = await new Promise<'update' | 'conflict' | 'timeout'>((resolve) => {
      const t = setTimeout(() => resolve('timeout'), Number(p.timeout) * 1000);
      const mine = (r: 'update' | 'conflict') => {
        clearTimeout(t);
        if (waiter === mine) waiter = undefined;
        resolve(r);
      };
      waiter = mine;
      req.socket.once('close', () => mine('conflict'));
    });
    if (reason === 'conflict') {
      throw {
        error_code: 409,
        description:
          'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running',
      } satisfies Failure;
    }
    return ready();
  }

  function sendMessage(p: Record<string, unknown>): unknown {
    const chatId = Number(p.chat_id);
    const to = migrated.get(chatId);
    if (to !== undefined) {
      throw {
        error_code: 400,
        description: 'Bad Request: group chat was upgraded to a supergroup chat',
        parameters: { migrate_to_chat_id: to },
      } satisfies Failure;
    }
    const text = String(p.text ?? '');
    if (p.parse_mode === 'HTML' && !balancedHtml(text)) {
      throw {
        error_code: 400,
        description: "Bad Request: can't parse entities: unclosed tag",
      } satisfies Failure;
    }
    const messageId = takeMessageId(chatId);
    const record = {
      chat_id: chatId,
      text,
      message_id: messageId,
      ...(p.message_thread_id !== undefined ? { message_thread_id: Number(p.message_thread_id) } : {}),
      ...(p.parse_mode ? { parse_mode: String(p.parse_mode) } : {}),
      ...(p.reply_markup ? { reply_markup: p.reply_markup } : {}),
    };
    sentMessages.push(record);
    return {
      message_id: messageId,
      date: Math.floor(Date.now() / 1000),
      chat: { id: chatId, type: chatId > 0 ? 'private' : 'supergroup' },
      from: bot(),
      text,
      ...(record.message_thread_id !== undefined ? { message_thread_id: record.message_thread_id } : {}),
    };
  }

  async function call(
    method: string,
    p: Record<string, unknown>,
    req: http.IncomingMessage,
  ): Promise<unknown> {
    const failure = takeFailure(method);
    if (failure) throw failure;
    switch (method) {
      case 'getMe':
        return bot();
      case 'getUpdates':
        if (webhook) {
          throw {
            error_code: 409,
            description:
              "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
          };
        }
        return getUpdates(p, req);
      case 'sendMessage':
        return sendMessage(p);
      case 'getFile': {
        const file = files.get(String(p.file_id));
        if (!file) throw { error_code: 400, description: 'Bad Request: invalid file_id' } satisfies Failure;
        return {
          file_id: String(p.file_id),
          file_unique_id: `u-${String(p.file_id)}`,
          file_size: file.bytes.byteLength,
          file_path: file.path,
        };
      }
      case 'sendPhoto':
      case 'sendVoice':
      case 'sendDocument':
        return sendFile(method, p);
      case 'setMessageReaction':
        return setReaction(p);
      case 'deleteMessage':
        return deleteMessage(p);
      case 'editMessageText':
        return editMessageText(p);
      case 'sendChatAction':
      case 'answerCallbackQuery':
      case 'editMessageReplyMarkup':
        return true;
      case 'setWebhook':
        webhook = { url: String(p.url), ...(p.secret_token ? { secret: String(p.secret_token) } : {}) };
        void deliverWebhook();
        return true;
      case 'deleteWebhook':
        webhook = undefined;
        return true;
      case 'getWebhookInfo':
        return {
          url: webhook?.url ?? '',
          has_custom_certificate: false,
          pending_update_count: updates.length,
        };
      default:
        throw { error_code: 404, description: `Not Found: method ${method} is not faked` } satisfies Failure;
    }
  }

  /** The bot changes the text of one of its own text messages, as Telegram does (not a deleted one, not to the same text). */
  function editMessageText(p: Record<string, unknown>): unknown {
    const at = { chat_id: Number(p.chat_id), message_id: Number(p.message_id) };
    const message = sentMessages.find((m) => m.chat_id === at.chat_id && m.message_id === at.message_id);
    const gone = deletedMessages.some((d) => d.chat_id === at.chat_id && d.message_id === at.message_id);
    if (!message || gone)
      throw { error_code: 400, description: 'Bad Request: message to edit not found' } satisfies Failure;
    const text = String(p.text ?? '');
    if (p.parse_mode === 'HTML' && !balancedHtml(text))
      throw { error_code: 400, description: "Bad Request: can't parse entities: unclosed tag" } satisfies Failure;
    if (text === message.text)
      throw {
        error_code: 400,
        description: 'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message',
      } satisfies Failure;
    message.text = text;
    editedMessages.push({ ...at, text });
    return { message_id: at.message_id, date: Math.floor(Date.now() / 1000), chat: { id: at.chat_id, type: 'supergroup' }, from: bot(), text };
  }

  /** The bot deletes one of its own messages, once: after that Telegram no longer finds it. */
  function deleteMessage(p: Record<string, unknown>): true {
    const at = { chat_id: Number(p.chat_id), message_id: Number(p.message_id) };
    const ours = [...sentMessages, ...sentFiles].some(
      (m) => m.chat_id === at.chat_id && m.message_id === at.message_id,
    );
    const gone = deletedMessages.some((d) => d.chat_id === at.chat_id && d.message_id === at.message_id);
    if (!ours || gone)
      throw { error_code: 400, description: 'Bad Request: message to delete not found' } satisfies Failure;
    deletedMessages.push(at);
    return true;
  }

  /** The bot's reaction replaces its earlier one on the message; only emoji of Telegram's list are taken. */
  function setReaction(p: Record<string, unknown>): true {
    const list = (p.reaction ?? []) as { type?: string; emoji?: string }[];
    for (const r of list)
      if (r.type !== 'emoji' || !REACTION_EMOJI.has(String(r.emoji)))
        throw { error_code: 400, description: 'Bad Request: REACTION_INVALID' } satisfies Failure;
    if (!Number.isSafeInteger(Number(p.message_id)) || Number(p.message_id) <= 0)
      throw { error_code: 400, description: 'Bad Request: message to react not found' } satisfies Failure;
    reactionsOn.set(
      `${Number(p.chat_id)}:${Number(p.message_id)}`,
      list.map((r) => String(r.emoji)),
    );
    return true;
  }

  /** JSON, or multipart when the bot uploads a file: the file's part becomes `{ fileName, bytes }`. */
  async function paramsOf(req: http.IncomingMessage, raw: Buffer): Promise<Record<string, unknown>> {
    const type = req.headers['content-type'] ?? '';
    if (!type.startsWith('multipart/form-data')) {
      const text = raw.toString('utf8');
      return text ? (JSON.parse(text) as Record<string, unknown>) : {};
    }
    const form = await readMultipart(type, raw);
    const params: Record<string, unknown> = {};
    for (const [key, value] of form)
      params[key] =
        typeof value === 'string'
          ? value
          : { fileName: value.name, bytes: Buffer.from(await value.arrayBuffer()) };
    // grammY names the upload "attach://<part>" and sends the bytes as that part.
    for (const [key, value] of Object.entries(params))
      if (typeof value === 'string' && value.startsWith('attach://'))
        params[key] = params[value.slice('attach://'.length)];
    return params;
  }

  /** sendPhoto, sendVoice, sendDocument: the upload is kept, and answered as a message. */
  function sendFile(method: string, p: Record<string, unknown>): unknown {
    const field = { sendPhoto: 'photo', sendVoice: 'voice', sendDocument: 'document' }[method] as string;
    const file = p[field] as { fileName: string; bytes: Buffer } | undefined;
    if (!file?.bytes)
      throw {
        error_code: 400,
        description: `Bad Request: there is no ${field} in the request`,
      } satisfies Failure;
    const chatId = Number(p.chat_id);
    const messageId = takeMessageId(chatId);
    sentFiles.push({
      method,
      chat_id: chatId,
      fileName: file.fileName,
      bytes: file.bytes,
      message_id: messageId,
      ...(p.caption !== undefined ? { caption: String(p.caption) } : {}),
    });
    return {
      message_id: messageId,
      date: Math.floor(Date.now() / 1000),
      chat: { id: chatId, type: chatId > 0 ? 'private' : 'supergroup' },
      from: bot(),
      [field]: { file_id: `sent-${messageId}`, file_unique_id: `u-sent-${messageId}` },
    };
  }

  function serveFile(fileToken: string, filePath: string, res: http.ServerResponse): void {
    const file = [...files.values()].find((f) => f.path === filePath);
    if (fileToken !== token || !file) return void res.writeHead(404).end('Not Found');
    downloaded.push(filePath);
    res.writeHead(200, {
      'content-type': 'application/octet-stream',
      'content-length': String(file.bytes.byteLength),
    });
    if (!file.truncate) return void res.end(file.bytes);
    // Half the body, then the connection goes: what a dropped download looks like to the client.
    res.write(file.bytes.subarray(0, Math.floor(file.bytes.byteLength / 2)), () => res.destroy());
  }

  const server = http.createServer((req, res) => {
    if (unreachable) return void req.socket.destroy();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake');
      const fileMatch = /^\/file\/bot([^/]+)\/(.+)$/.exec(url.pathname);
      if (fileMatch) return serveFile(fileMatch[1] as string, fileMatch[2] as string, res);
      const match = /^\/bot([^/]+)\/(\w+)$/.exec(url.pathname);
      const reply = (status: number, body: unknown) => {
        if (res.writableEnded || res.destroyed) return;
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      };
      if (!match || match[1] !== token)
        return reply(404, { ok: false, error_code: 404, description: 'Not Found' });
      const method = match[2] as string;
      void paramsOf(req, Buffer.concat(chunks)).then((params) => {
        for (const [k, v] of url.searchParams) params[k] = v;
        calls.push({ method, params, at: Date.now() });
        if (method === 'getUpdates') {
          activePolls += 1;
          maxPolls = Math.max(maxPolls, activePolls);
          res.once('close', () => (activePolls -= 1));
        }
        call(method, params, req).then(
          (result) => {
            if (method === 'getUpdates' && Array.isArray(result) && result.length > 0) {
              opts.onUpdatesAnswered?.((result as Update[]).map((u) => u.update_id));
            }
            reply(200, { ok: true, result });
          },
          (err: Failure) =>
            reply(err.error_code ?? 500, {
              ok: false,
              error_code: err.error_code ?? 500,
              description: err.description ?? String(err),
              ...(err.parameters ? { parameters: err.parameters } : {}),
            }),
        );
      });
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const apiRoot = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const push = (update: Record<string, unknown>) => {
    const id = nextUpdateId++;
    updates.push({ ...update, update_id: id });
    wake();
    return id;
  };

  const message: FakeTelegram['message'] = (m) => {
    const messageId = takeMessageId(m.chat.id);
    const updateId = push({
      message: {
        message_id: messageId,
        date: Math.floor(Date.now() / 1000),
        chat: m.chat,
        from: { first_name: 'User', is_bot: false, ...m.from },
        ...(m.text !== undefined ? { text: m.text } : {}),
        ...(m.caption !== undefined ? { caption: m.caption } : {}),
        ...(m.thread !== undefined ? { message_thread_id: m.thread, is_topic_message: true } : {}),
        ...(m.entities ? { entities: m.entities } : {}),
        ...m.extra,
      },
    });
    return { updateId, messageId };
  };

  let nextFile = 1;
  const media: FakeTelegram['media'] = ({
    kind,
    bytes,
    fileName,
    mimeType,
    duration,
    caption,
    truncate,
    declaredSize,
    ...m
  }) => {
    const fileId = `file-${nextFile++}`;
    const ext = { voice: 'oga', audio: 'mp3', photo: 'jpg', document: 'bin', video: 'mp4' }[kind];
    files.set(fileId, { path: `${kind}s/file_${fileId}.${ext}`, bytes, truncate: truncate === true });
    const file = {
      file_id: fileId,
      file_unique_id: `u-${fileId}`,
      file_size: declaredSize ?? bytes.byteLength,
      ...(fileName !== undefined ? { file_name: fileName } : {}),
      ...(mimeType !== undefined ? { mime_type: mimeType } : {}),
      ...(duration !== undefined ? { duration } : {}),
    };
    const content =
      kind === 'photo'
        ? {
            photo: [
              { ...file, width: 90, height: 90, file_id: `${fileId}-thumb` },
              { ...file, width: 800, height: 600 },
            ],
          }
        : { [kind]: kind === 'video' ? { ...file, width: 640, height: 480 } : file };
    return { ...message({ ...m, ...(caption !== undefined ? { caption } : {}), extra: content }), fileId };
  };

  return {
    apiRoot,
    token,
    media,
    downloads: () => downloaded,
    async linkOwner(ownerId) {
      message({ chat: { id: ownerId, type: 'private' }, from: { id: ownerId }, text: '/start' });
      await waitFor(
        'the owner told their id',
        () => sentMessages.find((s) => s.chat_id === ownerId && s.text.includes(String(ownerId))),
        30_000,
      );
    },
    sentFiles: () => sentFiles,
    botId,
    username,
    calls,
    deleted: () => deletedMessages,
    edits: () => editedMessages,
    reactions: (chatId, messageId) => reactionsOn.get(`${chatId}:${messageId}`) ?? [],
    sent: () => sentMessages,
    push,
    message,
    forward({ author, ...m }) {
      const date = Math.floor(Date.now() / 1000) - 60;
      return message({
        ...m,
        extra: {
          forward_origin: { type: 'user', date, sender_user: { is_bot: false, ...author } },
          forward_date: date,
        },
      });
    },
    failNext(method, failure, times = 1) {
      const list = failures.get(method) ?? [];
      list.push({ failure, left: times });
      failures.set(method, list);
    },
    migrate(from, to, title = 'Migrated group') {
      migrated.set(from, to);
      push({
        message: {
          message_id: takeMessageId(from),
          date: Math.floor(Date.now() / 1000),
          chat: { id: from, type: 'group', title },
          from: { id: 1, is_bot: false, first_name: 'Admin' },
          migrate_to_chat_id: to,
        },
      });
    },
    stallNextPoll: () => void (stallNext = true),
    down() {
      unreachable = true;
      for (const s of sockets) s.destroy();
    },
    up: () => void (unreachable = false),
    setPrivacy: (on) => void (privacy = on),
    maxConcurrentPolls: () => maxPolls,
    offsets: () => offsets,
    waitFor: (probe, timeoutMs = 10_000) => waitFor('the fake Telegram', probe, timeoutMs),
    async close() {
      waiter?.('conflict');
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Just enough of Telegram's HTML check: every opened tag is closed in order. */
function balancedHtml(text: string): boolean {
  const stack: string[] = [];
  for (const m of text.matchAll(/<(\/?)([a-z-]+)[^>]*>/g)) {
    if (m[1]) {
      if (stack.pop() !== m[2]) return false;
    } else stack.push(m[2] as string);
  }
  return stack.length === 0 && !/<(?![a-z/])/.test(text.replace(/<\/?[a-z-]+[^>]*>/g, ''));
}
