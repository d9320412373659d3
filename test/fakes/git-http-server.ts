import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { listenOnLoopback } from '../helpers/loopback-server.ts';

export interface GitHttpServer {
  /** The server's base URL; a repository `<root>/x.git` is at `${url}/x.git`. */
  url: string;
  /** Every request: method, path and query, and whether it carried the expected credential. */
  requests: { method: string; url: string; authorized: boolean }[];
  close(): Promise<void>;
}

/**
 * git's own smart-HTTP server (`git http-backend`, run as CGI per request) behind a small Node server
 * that requires `expectedAuth` in `authorization`, as a forge does: clone, fetch and push of the
 * repositories under `projectRoot`, 401 without the credential.
 */
export async function startGitHttpServer(projectRoot: string, expectedAuth: string): Promise<GitHttpServer> {
  const requests: GitHttpServer['requests'] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://git.local');
    const authorized = req.headers.authorization === expectedAuth;
    requests.push({ method: req.method ?? '', url: url.pathname + url.search, authorized });
    if (!authorized) {
      req.resume();
      res.writeHead(401, { 'www-authenticate': 'Basic realm="git"', 'content-type': 'text/plain' });
      res.end('authentication required\n');
      return;
    }
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts);
      const cgi = spawn('git', ['http-backend'], {
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          GIT_PROJECT_ROOT: projectRoot,
          GIT_HTTP_EXPORT_ALL: '1',
          // http-backend serves receive-pack only to an authenticated user.
          REMOTE_USER: 'tester',
          REQUEST_METHOD: req.method ?? 'GET',
          PATH_INFO: decodeURIComponent(url.pathname),
          QUERY_STRING: url.search.slice(1),
          CONTENT_TYPE: req.headers['content-type'] ?? '',
          CONTENT_LENGTH: String(body.length),
          ...(req.headers['content-encoding']
            ? { HTTP_CONTENT_ENCODING: req.headers['content-encoding'] }
            : {}),
          ...(typeof req.headers['git-protocol'] === 'string'
            ? { GIT_PROTOCOL: req.headers['git-protocol'] }
            : {}),
        },
        stdio: ['pipe', 'pipe', 'ignore'],
      });
      // http-backend may answer (an error) without reading all of its input.
      cgi.stdin.on('error', () => undefined);
      cgi.stdin.end(body);
      let head = Buffer.alloc(0);
      let headersDone = false;
      cgi.stdout.on('data', (chunk: Buffer) => {
        if (headersDone) {
          res.write(chunk);
          return;
        }
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end === -1) return;
        headersDone = true;
        let status = 200;
        const headers: Record<string, string> = {};
        for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
          const colon = line.indexOf(':');
          const name = line.slice(0, colon).trim();
          const value = line.slice(colon + 1).trim();
          if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
          else headers[name] = value;
        }
        res.writeHead(status, headers);
        res.write(head.subarray(end + 4));
      });
      cgi.stdout.on('end', () => {
        if (!headersDone) res.writeHead(500);
        res.end();
      });
    });
  });
  return { ...(await listenOnLoopback(server)), requests };
}
