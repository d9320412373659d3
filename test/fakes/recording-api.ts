import { createServer, type IncomingHttpHeaders } from 'node:http';
import { listenOnLoopback } from '../helpers/loopback-server.ts';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface RecordingApi {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/**
 * A real HTTP API on loopback that records every request and answers from what it got: `/echo` sends the
 * request's headers back (so a test sees whether the credential would be echoed), `/fail` answers 500 with
 * the authorization header inside its error text, `/big/<bytes>` streams that many bytes, anything else a
 * small JSON document. It requires `expectedAuth` in `authorization` and answers 401 otherwise.
 */
export async function startRecordingApi(expectedAuth: string): Promise<RecordingApi> {
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const url = req.url ?? '/';
      requests.push({
        method: req.method ?? '',
        url,
        headers: req.headers,
        body: Buffer.concat(parts).toString(),
      });
      if (req.headers.authorization !== expectedAuth) {
        res.writeHead(401, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ message: 'Bad credentials' }));
        return;
      }
      if (url.endsWith('/echo')) {
        res.writeHead(200, {
          'content-type': 'application/json',
          'x-echo-auth': req.headers.authorization ?? '',
        });
        res.end(JSON.stringify({ headers: req.headers }));
        return;
      }
      if (url.endsWith('/fail')) {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`internal error while handling token ${req.headers.authorization ?? ''}`);
        return;
      }
      const big = /\/big\/(\d+)$/.exec(url);
      if (big) {
        let left = Number(big[1]);
        const chunk = Buffer.alloc(64 * 1024, 'x');
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const write = () => {
          while (left > 0) {
            const piece = chunk.subarray(0, Math.min(left, chunk.length));
            left -= piece.length;
            if (!res.write(piece)) {
              res.once('drain', write);
              return;
            }
          }
          res.end();
        };
        write();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: true, method: req.method, url }));
    });
  });
  return { ...(await listenOnLoopback(server)), requests };
}
