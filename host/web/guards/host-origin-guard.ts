import type { MiddlewareHandler } from 'hono';

/**
 * Fails closed on a Host the console does not serve (a DNS name rebound to 127.0.0.1 reaches nothing), and
 * on a state change whose Origin names another site.
 */
export function hostOriginGuard(allowedHosts: ReadonlySet<string>): MiddlewareHandler {
  return async (c, next) => {
    const host = c.req.header('host') ?? '';
    if (!allowedHosts.has(host.toLowerCase())) return c.text('Unknown host name.', 421);
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      const origin = c.req.header('origin');
      if (origin !== undefined && !allowedHosts.has(hostOf(origin)))
        return c.text('Cross-site request refused.', 403);
    }
    await next();
  };
}

/** `host:port` of an Origin header ("http://127.0.0.1:8750"); empty for anything unparsable (refused). */
function hostOf(origin: string): string {
  try {
    return new URL(origin).host.toLowerCase();
  } catch {
    return '';
  }
}
