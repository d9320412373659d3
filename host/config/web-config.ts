import net from 'node:net';
import { z } from 'zod';

/** `host:port`, `[v6]:port`; the host part is an address or `localhost`. */
export interface ListenAddress {
  host: string;
  port: number;
}

const LISTEN = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s]+)):(\d{1,5})$/;

export function parseListen(text: string): ListenAddress | undefined {
  const m = LISTEN.exec(text.trim());
  if (!m) return undefined;
  const host = (m[1] ?? m[2]) as string;
  const port = Number(m[3]);
  // Port 0: any free port (tests); the console names the real one in its links.
  if (port > 65_535) return undefined;
  if (host !== 'localhost' && net.isIP(host) === 0) return undefined;
  return { host, port };
}

/** Loopback only: 127.0.0.0/8, ::1 and `localhost`; nothing else on the machine's network can connect. */
export function isLoopback(host: string): boolean {
  if (host === 'localhost' || host === '::1') return true;
  return net.isIPv4(host) && host.startsWith('127.');
}

/**
 * `[web]`: the web console. Off unless `listen` is set. An address other than loopback is refused unless
 * `allow_remote = true`: the console signs in with a link and a cookie over plain HTTP, so remote access is
 * the owner's reverse proxy with TLS in front of a loopback listener (README, "The web console").
 */
export const webConfigSchema = z
  .object({
    /** `127.0.0.1:8750`; absent: no web console. */
    listen: z
      .string()
      .refine((s) => parseListen(s) !== undefined, {
        message: 'must be "host:port" with an IP address or localhost, e.g. "127.0.0.1:8750"',
      })
      .optional(),
    /** Listen on a non-loopback address. Only behind a TLS proxy you control on a network you trust. */
    allow_remote: z.boolean().default(false),
    /** The address people open (the proxy's `https://…`), used in login links; default: `http://<listen>`. */
    public_url: z.url({ protocol: /^https?$/ }).optional(),
    /** How long a login link stays usable. */
    login_link_ttl_ms: z.number().int().min(10_000).max(3_600_000).default(600_000),
    /** How long a signed-in session lasts. */
    session_ttl_ms: z
      .number()
      .int()
      .min(60_000)
      .max(30 * 86_400_000)
      .default(7 * 86_400_000),
  })
  .strict()
  .superRefine((web, ctx) => {
    const addr = web.listen === undefined ? undefined : parseListen(web.listen);
    if (addr && !isLoopback(addr.host) && !web.allow_remote)
      ctx.addIssue({
        code: 'custom',
        path: ['listen'],
        message:
          `${addr.host} is not a loopback address: the console would be reachable from the network. ` +
          'Listen on 127.0.0.1 behind a reverse proxy with TLS, or set allow_remote = true',
      });
  });

export type WebConfig = z.infer<typeof webConfigSchema>;
