/**
 * A fake LLM provider: a real HTTP server speaking the OpenAI chat-completions protocol (JSON and SSE),
 * a minimal OpenAI responses API, the Anthropic messages API, and GET /v1/models. Tests script what it
 * answers and read back every request it received, including whether the client aborted it.
 */
import { EventEmitter, once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileTypeFromBuffer } from 'file-type';
import { setTimeout as delay } from 'node:timers/promises';
import {
  chatFrames,
  chatJson,
  encodeFrame,
  errorJson,
  messagesFrames,
  messagesJson,
  responsesFrames,
  responsesJson,
  type Frame,
  type NormalizedReply,
} from './fake-provider-formats.ts';
import { readMultipart } from './multipart-form.ts';
import {
  echoResponder,
  estimateTokens,
  promptTextOf,
  type ErrorReply,
  type FakeApi,
  type FakeRequest,
  type Responder,
  type ScriptedResponse,
  type TextReply,
  type ToolCallsReply,
} from './fake-provider-script.ts';

export * from './fake-provider-script.ts';

export interface FakeProviderOptions {
  /** When set, requests must authenticate with it (Bearer, or x-api-key on /v1/messages); else 401. */
  apiKey?: string;
  /** Ids listed by GET /v1/models. */
  models?: string[];
  /** Used when the script queue is empty; default: echo the last user message. */
  responder?: Responder;
  /** What /v1/audio/transcriptions hears in an audio file; default: "(speech)". */
  transcribe?: (audio: Buffer) => string;
}

/** One /v1/audio/transcriptions request the fake accepted: real audio, by its bytes. */
export interface FakeTranscription {
  model: string;
  fileName: string;
  /** Sniffed from the bytes (file-type), e.g. "audio/ogg; codecs=opus". */
  mime: string;
  bytes: number;
}

export interface FakeProvider {
  /** Origin, e.g. "http://127.0.0.1:41234" (Anthropic-style base URL). */
  readonly url: string;
  /** `${url}/v1` (OpenAI-style base URL). */
  readonly openaiBaseUrl: string;
  /** Every request received, in order. Entries are live: `aborted`/`completed` update later. */
  readonly requests: FakeRequest[];
  /** Queues responses (or per-request responder functions) used one per completion request. */
  script(...responses: (ScriptedResponse | Responder)[]): void;
  /** Replaces the responder used when the queue is empty (undefined restores the echo default). */
  setResponder(responder: Responder | undefined): void;
  /** The transcription requests it accepted, in order. */
  readonly transcriptions: FakeTranscription[];
  /** Scripted responses not yet used. */
  readonly pending: number;
  models: string[];
  /** Resolves once at least `count` requests have arrived. */
  waitForRequests(count: number): Promise<FakeRequest[]>;
  /** Resolves with performance.now() of the abort once the client aborted that request. */
  waitForAbort(request: FakeRequest): Promise<number>;
  /** Resolves once the request was answered completely or aborted. */
  waitForEnd(request: FakeRequest): Promise<void>;
  close(): Promise<void>;
}

function apiOf(method: string, path: string): FakeApi {
  if (method === 'POST' && path === '/v1/chat/completions') return 'chat';
  if (method === 'POST' && path === '/v1/responses') return 'responses';
  if (method === 'POST' && path === '/v1/messages') return 'messages';
  if (method === 'GET' && path === '/v1/models') return 'models';
  if (method === 'POST' && path === '/v1/audio/transcriptions') return 'transcriptions';
  return 'unknown';
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function parseJson(text: string): unknown {
  if (text.length === 0) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function splitText(reply: TextReply): string[] {
  if (reply.chunks) return reply.chunks;
  if (reply.text.length === 0) return [];
  if (reply.chunkSize && reply.chunkSize > 0) {
    const pieces: string[] = [];
    for (let i = 0; i < reply.text.length; i += reply.chunkSize)
      pieces.push(reply.text.slice(i, i + reply.chunkSize));
    return pieces;
  }
  return reply.text.match(/\S+\s*|\s+/g) ?? [reply.text];
}

export async function startFakeProvider(options: FakeProviderOptions = {}): Promise<FakeProvider> {
  const requests: FakeRequest[] = [];
  const queue: (ScriptedResponse | Responder)[] = [];
  const events = new EventEmitter();
  events.setMaxListeners(0);
  let responder: Responder = options.responder ?? echoResponder;
  let models = options.models ?? ['fake-model', 'fake-model-mini'];
  let replies = 0;
  let closing = false;
  // Connections the script cut itself; their close is not a client abort.
  const dropped = new WeakSet<FakeRequest>();

  const authorized = (req: IncomingMessage, api: FakeApi): boolean => {
    if (options.apiKey === undefined) return true;
    const bearer = /^Bearer\s+(.+)$/i.exec(single(req.headers.authorization) ?? '')?.[1];
    const xApiKey = single(req.headers['x-api-key']);
    if (api === 'messages' || api === 'models')
      return bearer === options.apiKey || xApiKey === options.apiKey;
    return bearer === options.apiKey;
  };

  const sendJson = (
    res: ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ) => {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      ...headers,
    });
    res.end(text);
  };

  const normalize = (reply: TextReply | ToolCallsReply, request: FakeRequest): NormalizedReply => {
    const id = ++replies;
    const body = record(request.body);
    const model = reply.model ?? (typeof body.model === 'string' ? body.model : 'fake-model');
    const calls =
      reply.kind === 'tool_calls'
        ? reply.calls.map((call, index) => ({
            id: call.id ?? `call_fake_${id}_${index}`,
            name: call.name,
            arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
          }))
        : [];
    const text = reply.text ?? '';
    const chunks = reply.kind === 'text' ? splitText(reply) : text.length > 0 ? [text] : [];
    const generated = text + calls.map((call) => call.name + call.arguments).join('');
    return {
      id,
      model,
      text,
      chunks,
      calls,
      finishReason: reply.kind === 'tool_calls' ? 'tool_calls' : (reply.finishReason ?? 'stop'),
      usage: {
        promptTokens: reply.usage?.promptTokens ?? estimateTokens(promptTextOf(request.body)),
        completionTokens: reply.usage?.completionTokens ?? estimateTokens(generated),
        ...(reply.usage?.costUsd !== undefined ? { costUsd: reply.usage.costUsd } : {}),
      },
      created: Math.floor(Date.now() / 1000),
    };
  };

  const sendError = (res: ServerResponse, request: FakeRequest, reply: ErrorReply) => {
    const body =
      reply.body ?? errorJson(request.api === 'messages', reply.status, `scripted error ${reply.status}`);
    sendJson(res, reply.status, body, reply.headers);
  };

  const stream = async (
    res: ServerResponse,
    request: FakeRequest,
    reply: TextReply | ToolCallsReply,
    frames: Frame[],
  ) => {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      ...reply.headers,
    });
    res.flushHeaders();
    if (reply.holdBody) await reply.holdBody;
    let contentSent = 0;
    for (const frame of frames) {
      if (res.destroyed) return;
      if (frame.content) {
        if (reply.drop !== undefined && contentSent >= reply.drop.afterChunks) {
          await reply.drop.when;
          if (res.destroyed) return;
          dropped.add(request);
          // end() flushes what was written, then closes mid-body: the client sees a truncated stream.
          res.socket?.end();
          return;
        }
        if (reply.pauseAfterChunks !== undefined && contentSent === reply.pauseAfterChunks && reply.resume)
          await reply.resume;
        if (reply.chunkDelayMs) await delay(reply.chunkDelayMs);
        if (res.destroyed) return;
        contentSent++;
      }
      if (!res.write(encodeFrame(frame))) await once(res, 'drain').catch(() => undefined);
    }
    res.end();
  };

  const answer = async (res: ServerResponse, request: FakeRequest) => {
    const next = queue.shift() ?? responder;
    const scripted = typeof next === 'function' ? await next(request) : next;
    if (scripted.kind === 'hang') return;
    if (scripted.kind === 'error') {
      sendError(res, request, scripted);
      return;
    }
    const normalized = normalize(scripted, request);
    const body = record(request.body);
    if (body.stream !== true) {
      const json =
        request.api === 'chat'
          ? chatJson(normalized)
          : request.api === 'responses'
            ? responsesJson(normalized)
            : messagesJson(normalized);
      sendJson(res, 200, json, scripted.headers);
      return;
    }
    const includeUsage = record(body.stream_options).include_usage === true;
    const frames =
      request.api === 'chat'
        ? chatFrames(normalized, includeUsage)
        : request.api === 'responses'
          ? responsesFrames(normalized)
          : messagesFrames(normalized);
    await stream(res, request, scripted, frames);
  };

  const transcriptions: FakeTranscription[] = [];
  /**
   * OpenAI's transcription route: multipart with `file` and `model`. It refuses what is not real audio
   * by its bytes, as a provider would, and answers with what `transcribe` hears and the seconds it billed.
   */
  const transcription = async (req: IncomingMessage, raw: Buffer, res: ServerResponse) => {
    const form = await readMultipart(single(req.headers['content-type']) ?? '', raw).catch(() => undefined);
    const file = form?.get('file');
    const model = form?.get('model');
    if (!(file instanceof File) || typeof model !== 'string') {
      sendJson(res, 400, errorJson(false, 400, 'file and model are required'));
      return;
    }
    const audio = Buffer.from(await file.arrayBuffer());
    const type = await fileTypeFromBuffer(audio);
    if (!type?.mime.startsWith('audio/')) {
      sendJson(res, 400, errorJson(false, 400, 'Invalid file format: not audio'));
      return;
    }
    transcriptions.push({ model, fileName: file.name, mime: type.mime, bytes: audio.byteLength });
    sendJson(res, 200, {
      text: (options.transcribe ?? (() => '(speech)'))(audio),
      usage: { type: 'duration', seconds: 3 },
    });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = req.url ?? '/';
    const queryAt = url.indexOf('?');
    const path = queryAt === -1 ? url : url.slice(0, queryAt);
    const method = req.method ?? 'GET';
    const rawBody = Buffer.concat(chunks).toString('utf8');
    const request: FakeRequest = {
      index: requests.length,
      method,
      path,
      query: queryAt === -1 ? '' : url.slice(queryAt),
      api: apiOf(method, path),
      headers: { ...req.headers },
      rawBody,
      body: parseJson(rawBody),
      receivedAt: performance.now(),
      aborted: false,
      abortedAt: undefined,
      completed: false,
    };
    requests.push(request);
    res.on('close', () => {
      if (res.writableFinished) {
        request.completed = true;
      } else if (!closing && !dropped.has(request)) {
        request.aborted = true;
        request.abortedAt = performance.now();
      }
      events.emit('end', request);
    });
    events.emit('request', request);

    if (request.api === 'unknown') {
      sendJson(res, 404, errorJson(false, 404, `fake provider: no route ${method} ${path}`));
      return;
    }
    if (!authorized(req, request.api)) {
      sendJson(
        res,
        401,
        errorJson(request.api === 'messages', 401, 'Incorrect API key provided.', 'invalid_api_key'),
      );
      return;
    }
    if (request.api === 'models') {
      sendJson(res, 200, {
        object: 'list',
        data: models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'fake' })),
      });
      return;
    }
    if (request.api === 'transcriptions') {
      await transcription(req, Buffer.concat(chunks), res);
      return;
    }
    if (record(request.body).model === undefined && request.api === 'messages') {
      sendJson(res, 400, errorJson(true, 400, 'model: Field required'));
      return;
    }
    await answer(res, request);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        sendJson(res, 500, errorJson(false, 500, `fake provider failed: ${String(error)}`));
      else res.destroy();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;

  const waitFor = <T>(check: () => T | undefined, event: string): Promise<T> => {
    const ready = check();
    if (ready !== undefined) return Promise.resolve(ready);
    return new Promise((resolve) => {
      const listener = () => {
        const value = check();
        if (value === undefined) return;
        events.off(event, listener);
        resolve(value);
      };
      events.on(event, listener);
    });
  };

  return {
    url,
    openaiBaseUrl: `${url}/v1`,
    transcriptions,
    requests,
    script(...responses) {
      queue.push(...responses);
    },
    setResponder(next) {
      responder = next ?? echoResponder;
    },
    get pending() {
      return queue.length;
    },
    get models() {
      return models;
    },
    set models(next: string[]) {
      models = next;
    },
    waitForRequests(count) {
      return waitFor(() => (requests.length >= count ? requests.slice() : undefined), 'request');
    },
    waitForAbort(request) {
      return waitFor(() => request.abortedAt, 'end');
    },
    waitForEnd(request) {
      return waitFor(() => (request.aborted || request.completed ? true : undefined), 'end').then(
        () => undefined,
      );
    },
    async close() {
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
