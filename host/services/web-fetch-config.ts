import { isIP } from 'node:net';
import { z } from 'zod';

/** A host name or IP literal as `new URL()` would write it, so the allowlist compares like with like. */
function normaliseHost(entry: string): string | undefined {
  const trimmed = entry.trim();
  if (!trimmed || /[/?#@\s]/.test(trimmed)) return undefined;
  const literal = isIP(trimmed) === 6 ? `[${trimmed}]` : trimmed;
  try {
    const url = new URL(`http://${literal}/`);
    if (url.port) return undefined;
    return comparableHost(url);
  } catch {
    return undefined;
  }
}

/** The URL's host without brackets or a trailing dot: the key looked up in `allow_private_hosts`. */
export function comparableHost(url: URL): string {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

const allowedHost = z.string().transform((entry, ctx) => {
  const host = normaliseHost(entry);
  if (host === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `"${entry}" is not a host name or IP address; write it like "nas.lan" or "192.168.1.20" (no scheme, port or path)`,
    });
    return z.NEVER;
  }
  return host;
});

/** `[web_fetch]` section of config.toml. Every key has a default, so an empty section is valid. */
export const webFetchConfigSchema = z
  .object({
    /** Bytes read from the response body (after decompression); the rest is cut and `truncated` set. */
    max_bytes: z
      .number()
      .int()
      .min(1024)
      .max(16 * 1024 * 1024)
      .default(1024 * 1024),
    /**
     * Characters of text returned to the agent. Keeps the reply well inside one IPC frame (1 MiB, at
     * most 3 bytes per character once invisible controls are removed) and the model's context.
     */
    max_output_chars: z.number().int().min(1000).max(300_000).default(100_000),
    /** Total time for one call: every DNS lookup, redirect and body byte. */
    timeout_ms: z.number().int().min(100).max(120_000).default(15_000),
    max_redirects: z.number().int().min(0).max(20).default(5),
    /**
     * Host names (or IP literals) the owner lets web_fetch reach even though they resolve to private,
     * loopback or link-local addresses, e.g. a NAS on the LAN. Every redirect hop is matched on its own.
     */
    allow_private_hosts: z.array(allowedHost).default([]),
  })
  .strict();

export type WebFetchConfig = z.output<typeof webFetchConfigSchema>;
