import fs from 'node:fs';
import http from 'node:http';
import type { Channel, ChannelHost, ChannelStatus } from '../../host/channels/channel.ts';

/**
 * A chat platform stand-in for crash tests: inbound messages arrive as HTTP posts on a Unix socket,
 * deliveries are appended to a JSONL file. A reply containing "[die-during-delivery]" kills the whole
 * process mid-delivery (once, remembered by a marker file), which is exactly a host crash with a reply
 * stored in the outbox but not yet confirmed.
 */
export function createSocketChannel(opts: { socketFile: string; deliveriesFile: string; dieMarker: string }) {
  let host: ChannelHost | undefined;
  let server: http.Server | undefined;
  let status: ChannelStatus = { state: 'stopped', reason: 'not started', since: new Date().toISOString() };
  const setStatus = (state: ChannelStatus['state'], reason?: string) => {
    status = { state, ...(reason ? { reason } : {}), since: new Date().toISOString() };
    host?.onStatus(status);
  };
  let seq = 0;
  const channel: Channel = {
    name: 'fake',
    textLimit: 4096,
    formattingRules: 'plain text',
    async start(h) {
      host = h;
      if (fs.existsSync(opts.socketFile)) fs.unlinkSync(opts.socketFile);
      server = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
            chatId: string;
            externalId: string;
            text: string;
          };
          const result = host?.ingest({
            channel: 'fake',
            chatId: body.chatId,
            externalId: body.externalId,
            senderId: 'friend',
            senderName: 'Friend',
            text: body.text,
            sentAt: new Date().toISOString(),
            mentionsBot: false,
            repliesToBot: false,
            fromOwner: false,
          });
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(result ?? null));
        });
      });
      await new Promise<void>((resolve) => server?.listen(opts.socketFile, resolve));
      setStatus('connected');
    },
    async stop() {
      server?.closeAllConnections();
      server?.close();
      setStatus('stopped', 'stopped by the host');
      host = undefined;
    },
    status: () => status,
    adminChatId: () => undefined,
    async send({ chatId, text, idempotencyKey }) {
      if (text.includes('[die-during-delivery]') && !fs.existsSync(opts.dieMarker)) {
        fs.writeFileSync(opts.dieMarker, String(process.pid));
        process.kill(process.pid, 'SIGKILL');
        await new Promise(() => undefined);
      }
      fs.appendFileSync(
        opts.deliveriesFile,
        `${JSON.stringify({ chatId, text, key: idempotencyKey, pid: process.pid })}\n`,
      );
      seq += 1;
      return { kind: 'delivered', platformIds: [`fake-${process.pid}-${seq}`] };
    },
    async setTyping() {},
  };
  return channel;
}

export function postToSocketChannel(
  socketFile: string,
  body: { chatId: string; externalId: string; text: string },
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = http.request(
      {
        socketPath: socketFile,
        method: 'POST',
        path: '/',
        headers: { 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}
