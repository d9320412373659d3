/**
 * The smallest WebSocket server a test fake needs (RFC 6455, binary messages only): the upgrade handshake,
 * masked client frames in, unmasked binary frames out, ping answered, close echoed. Written here so that
 * the fakes need no WebSocket library of their own.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

const HANDSHAKE_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const OP = { continuation: 0x0, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const;

export interface WsConnection {
  send(data: Uint8Array): void;
  /** Closes with a close frame, then ends the TCP connection. */
  close(code?: number): void;
  readonly open: boolean;
}

export interface WsServer {
  /** `ws://127.0.0.1:<port>/` */
  url: string;
  close(): Promise<void>;
}

function frame(opcode: number, payload: Uint8Array): Buffer {
  const len = payload.byteLength;
  const head =
    len < 126
      ? Buffer.from([0x80 | opcode, len])
      : len < 65536
        ? Buffer.from([0x80 | opcode, 126, len >> 8, len & 0xff])
        : Buffer.concat([Buffer.from([0x80 | opcode, 127]), bigLength(len)]);
  return Buffer.concat([head, payload]);
}

function bigLength(len: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(len));
  return b;
}

/** Splits the bytes read so far into whole frames; returns the frames and what is left over. */
function readFrames(buf: Buffer): {
  frames: { fin: boolean; opcode: number; payload: Buffer }[];
  rest: Buffer;
} {
  const frames: { fin: boolean; opcode: number; payload: Buffer }[] = [];
  let at = 0;
  for (;;) {
    if (buf.length - at < 2) break;
    const b0 = buf[at] as number;
    const b1 = buf[at + 1] as number;
    let len = b1 & 0x7f;
    let head = 2;
    if (len === 126) {
      if (buf.length - at < 4) break;
      len = buf.readUInt16BE(at + 2);
      head = 4;
    } else if (len === 127) {
      if (buf.length - at < 10) break;
      len = Number(buf.readBigUInt64BE(at + 2));
      head = 10;
    }
    const masked = (b1 & 0x80) !== 0;
    const maskAt = at + head;
    const dataAt = maskAt + (masked ? 4 : 0);
    if (buf.length < dataAt + len) break;
    const payload = Buffer.from(buf.subarray(dataAt, dataAt + len));
    if (masked)
      for (let i = 0; i < len; i++) payload[i] = (payload[i] as number) ^ (buf[maskAt + (i % 4)] as number);
    frames.push({ fin: (b0 & 0x80) !== 0, opcode: b0 & 0x0f, payload });
    at = dataAt + len;
  }
  return { frames, rest: buf.subarray(at) };
}

/**
 * Listens on 127.0.0.1 and calls `onConnection` for each client; the returned handler gets each whole
 * binary message, `onClose` when the connection is gone.
 */
export async function startWsServer(
  onConnection: (conn: WsConnection) => { onMessage(data: Buffer): void; onClose?(): void },
): Promise<WsServer> {
  const server = http.createServer((_req, res) => {
    res.writeHead(426).end('WebSocket only');
  });
  const sockets = new Set<Socket>();
  server.on('upgrade', (req, socket: Socket) => {
    const key = req.headers['sec-websocket-key'];
    if (typeof key !== 'string') {
      socket.end('HTTP/1.1 400 Bad Request\r\n\r\n');
      return;
    }
    const accept = crypto
      .createHash('sha1')
      .update(key + HANDSHAKE_GUID)
      .digest('base64');
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        `Sec-WebSocket-Accept: ${accept}\r\n\r\n`,
    );
    socket.setNoDelay(true);
    sockets.add(socket);
    let open = true;
    const conn: WsConnection = {
      send(data) {
        if (open) socket.write(frame(OP.binary, data));
      },
      close(code = 1000) {
        if (!open) return;
        open = false;
        const body = Buffer.alloc(2);
        body.writeUInt16BE(code);
        socket.end(frame(OP.close, body));
      },
      get open() {
        return open && !socket.destroyed;
      },
    };
    const handler = onConnection(conn);
    let pending: Buffer = Buffer.alloc(0);
    let message: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => {
      const { frames, rest } = readFrames(Buffer.concat([pending, chunk]));
      pending = rest;
      for (const f of frames) {
        if (f.opcode === OP.ping) socket.write(frame(OP.pong, f.payload));
        else if (f.opcode === OP.close) conn.close(1000);
        else if (f.opcode === OP.binary || f.opcode === OP.continuation) {
          message.push(f.payload);
          if (f.fin) {
            const whole = Buffer.concat(message);
            message = [];
            handler.onMessage(whole);
          }
        }
      }
    });
    socket.on('close', () => {
      open = false;
      sockets.delete(socket);
      handler.onClose?.();
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}/`,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
