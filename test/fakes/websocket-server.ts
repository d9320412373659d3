/**
 * The WebSocket server the test fakes need (binary messages), on `ws`, the library Baileys itself speaks
 * WebSocket with: each connection's whole binary messages in, binary frames out; pings and the close
 * handshake are the library's.
 */
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type RawData } from 'ws';

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

function bytesOf(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
}

/**
 * Listens on 127.0.0.1 and calls `onConnection` for each client; the returned handler gets each whole
 * binary message, `onClose` when the connection is gone.
 */
export async function startWsServer(
  onConnection: (conn: WsConnection) => { onMessage(data: Buffer): void; onClose?(): void },
): Promise<WsServer> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  server.on('connection', (socket) => {
    socket.binaryType = 'nodebuffer';
    const conn: WsConnection = {
      send(data) {
        if (socket.readyState === socket.OPEN) socket.send(data, { binary: true });
      },
      close(code = 1000) {
        if (socket.readyState === socket.OPEN) socket.close(code);
      },
      get open() {
        return socket.readyState === socket.OPEN;
      },
    };
    const handler = onConnection(conn);
    socket.on('message', (data, isBinary) => {
      if (isBinary) handler.onMessage(bytesOf(data));
    });
    socket.on('close', () => handler.onClose?.());
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}/`,
    async close() {
      for (const client of server.clients) client.terminate();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
