import type { MiddlewareHandler } from 'hono';
import { secureHeaders } from 'hono/secure-headers';

const secure = secureHeaders({
  // Nothing but this host's own files; no inline script or style, no frames, forms only to this host. A page
  // that somehow carried injected markup still could not run it or send anything elsewhere. No nonce: the
  // console has no inline script, so one policy fits every answer.
  contentSecurityPolicy: {
    defaultSrc: ["'none'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'"],
    imgSrc: ["'self'"],
    connectSrc: ["'self'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
    baseUri: ["'none'"],
  },
  xContentTypeOptions: true,
  // A login link's token must not leave in a Referer header. Not `no-referrer` (Hono's default): with it
  // Chromium sends `Origin: null` on this host's own forms, and the origin guard would refuse them.
  referrerPolicy: 'same-origin',
  xFrameOptions: 'DENY',
  // Hono's other defaults are off: the console sends exactly the headers it always sent, and a new one is a
  // decision of its own (HSTS, for one, belongs to the owner's TLS proxy, not to a loopback listener).
  crossOriginResourcePolicy: false,
  crossOriginOpenerPolicy: false,
  originAgentCluster: false,
  strictTransportSecurity: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false,
});

/**
 * The console's security headers on every answer, a refusal and a 404 included. `secureHeaders()` writes
 * them all but `Cache-Control`, which is not a security header in its vocabulary: no page, fragment or
 * event of the console is kept by a browser or a proxy, so it is set here after the same `next()`.
 */
export function consoleSecurityHeaders(): MiddlewareHandler {
  return async (c, next) => {
    await secure(c, async () => {
      await next();
      c.header('Cache-Control', 'no-store');
    });
  };
}
