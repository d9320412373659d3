import type { Server } from 'node:http';
import { createAdaptorServer } from '@hono/node-server';
import { parseListen } from '../config/web-config.ts';
import type { WebConfig } from '../config/web-config.ts';
import { createWebApp } from './web-app.ts';
import type { WebConsoleDeps } from './web-console-deps.ts';

export interface WebConsole {
  /** Where the console is opened (public_url, or http://<listen>). */
  baseUrl: string;
  /** A one-time sign-in link for whoever asked (`cli`, `local:owner`). */
  loginLink(issuedTo: string): { url: string; expiresAt: string };
  close(): Promise<void>;
}

/** The Host values a request may carry: the listen address, its loopback spellings, the proxy's name. */
export function allowedHosts(
  listen: { host: string; port: number },
  publicUrl: string | undefined,
): Set<string> {
  const hosts = new Set<string>();
  const add = (host: string) => hosts.add(`${host.includes(':') ? `[${host}]` : host}:${listen.port}`);
  add(listen.host);
  if (listen.host === 'localhost' || listen.host.startsWith('127.') || listen.host === '::1') {
    add('localhost');
    add('127.0.0.1');
  }
  if (publicUrl !== undefined) hosts.add(new URL(publicUrl).host.toLowerCase());
  return hosts;
}

/**
 * Starts the web console on `[web] listen` (validated loopback unless allow_remote). Resolves once it
 * listens; a taken port rejects with the reason.
 */
export async function startWebConsole(
  web: WebConfig & { listen: string },
  deps: Omit<WebConsoleDeps, 'allowedHosts' | 'secureCookie'>,
): Promise<WebConsole> {
  const wanted = parseListen(web.listen);
  if (!wanted) throw new Error(`[web] listen = "${web.listen}" is not "host:port"`);
  const hosts = new Set<string>();
  const app = createWebApp({
    ...deps,
    allowedHosts: hosts,
    secureCookie: web.public_url?.startsWith('https:') ?? false,
  });
  // overrideGlobalObjects: false keeps Node's own Request and Response for the rest of the host (the gateway).
  const server = createAdaptorServer({ fetch: app.fetch, overrideGlobalObjects: false }) as Server;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(wanted.port, wanted.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const listen = {
    host: wanted.host,
    port: typeof address === 'object' && address ? address.port : wanted.port,
  };
  for (const host of allowedHosts(listen, web.public_url)) hosts.add(host);
  const shown = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
  const baseUrl = (web.public_url ?? `http://${shown}:${listen.port}`).replace(/\/$/, '');
  return {
    baseUrl,
    loginLink(issuedTo) {
      const { token, expiresAt } = deps.auth.issueLink(issuedTo);
      return { url: `${baseUrl}/login?token=${token}`, expiresAt: new Date(expiresAt).toISOString() };
    },
    async close() {
      // Open event streams would hold close() for ever.
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      deps.auth.flushRefused();
    },
  };
}
