import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';

export type RouteHandler = (
  req: http.IncomingMessage,
  res: http.ServerResponse,
  url: URL,
) => void | Promise<void>;

export class SocketInUseError extends Error {}

const MAX_BODY_BYTES = 256 * 1024;

export function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export async function readJsonBody(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new BadRequest(`request body is larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new BadRequest('request body is not valid JSON');
  }
}

export class BadRequest extends Error {}

async function socketAnswers(file: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(file);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/**
 * An HTTP server on a Unix socket that only the owner can open (the file is 0600 inside a 0700 folder):
 * file permissions are the authentication. A live socket means another host owns this data folder.
 */
export async function listenOnSocket(
  file: string,
  routes: Record<string, RouteHandler>,
): Promise<http.Server> {
  if (Buffer.byteLength(file) > 100) {
    throw new Error(`the socket path ${file} is too long for a Unix socket; use a shorter CARAPACE_DATA_DIR`);
  }
  if (fs.existsSync(file)) {
    if (await socketAnswers(file)) {
      throw new SocketInUseError(`another Carapace host is already running with this data folder (${file})`);
    }
    fs.unlinkSync(file);
  }
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://carapace');
    const handler = routes[`${req.method} ${url.pathname}`];
    if (!handler) return sendJson(res, 404, { error: `no such endpoint: ${req.method} ${url.pathname}` });
    Promise.resolve(handler(req, res, url)).catch((err: unknown) => {
      if (res.headersSent) return res.destroy();
      if (err instanceof BadRequest) return sendJson(res, 400, { error: err.message });
      sendJson(res, 500, { error: 'internal error; see the host log' });
    });
  });
  // Connecting needs write permission on the socket; the default umask already denies it to others, and
  // the data folder is 0700, so tightening to 0600 right after listen leaves no window for another user.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(file, () => resolve());
  });
  fs.chmodSync(file, 0o600);
  return server;
}
