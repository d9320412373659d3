import type { ServerResponse } from 'node:http';

/** A request the host refuses, with the HTTP status the container gets and why. */
export class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Answers a refusal as JSON (or cuts a started answer off); returns the bytes sent, for the audit row. */
export function sendRefusal(res: ServerResponse, status: number, message: string): number {
  const body = JSON.stringify({ error: { message } });
  if (res.headersSent) res.destroy();
  else {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }
  return Buffer.byteLength(body);
}
