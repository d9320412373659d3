import crypto from 'node:crypto';
import type { AuditStore } from '../store/audit-store.ts';
import type { WebSessionRecord, WebSessionsStore } from '../store/web-sessions-store.ts';
import type { Clock } from '../time/clock.ts';

export interface WebAuthDeps {
  sessions: WebSessionsStore;
  audit: Pick<AuditStore, 'record'>;
  clock: Pick<Clock, 'now'>;
  linkTtlMs: number;
  sessionTtlMs: number;
}

export interface SignedIn {
  session: WebSessionRecord;
  /** The cookie's value: the session's secret, never stored (only its hash is). */
  cookieToken: string;
}

/** The session whose cookie came with a request, with the CSRF token its pages carry. */
export interface Authenticated {
  session: WebSessionRecord;
  csrf: string;
}

/** The audit's operation for sign-ins, link issues and revocations. */
export const WEB_AUDIT_OPERATION = 'web.session';

const secret = () => crypto.randomBytes(32).toString('base64url');
const sha256 = (s: string) => crypto.createHash('sha256').update(s).digest('hex');
// Bounded before hashing: a cookie or form field is attacker input, and a token is 43 characters.
const plausible = (s: string | undefined): s is string =>
  s !== undefined && s.length >= 20 && s.length <= 100 && /^[A-Za-z0-9_-]+$/.test(s);

/**
 * The live sessions, listed and revoked (audited): the Sessions page's code, and `carapace web sessions|revoke`'s,
 * which open the store directly (a revoked session is refused at its next request, as the host reads the store
 * on every one).
 */
export function createWebSessionAdmin({
  sessions,
  audit,
  clock,
}: Pick<WebAuthDeps, 'sessions' | 'audit' | 'clock'>) {
  return {
    list(): WebSessionRecord[] {
      return sessions.list(clock.now());
    },

    revoke(id: string, by: string): boolean {
      const ok = sessions.revoke(id, clock.now());
      if (ok)
        audit.record({
          operation: WEB_AUDIT_OPERATION,
          decision: 'revoked',
          approver: by,
          details: { session: id },
        });
      return ok;
    },
  };
}

/**
 * Who may use the web console. A one-time link (a random secret; stored as its SHA-256; usable once, until it
 * expires) is exchanged for a session, whose secret lives only in an HttpOnly cookie. Every state change
 * carries a CSRF token derived from that secret (HMAC), so a page of another site cannot forge one even if a
 * browser sent the cookie along. Every check returns "no" on anything unexpected.
 */
export function createWebAuth({ sessions, audit, clock, linkTtlMs, sessionTtlMs }: WebAuthDeps) {
  const csrfOf = (cookieToken: string) =>
    crypto.createHmac('sha256', cookieToken).update('carapace-web-csrf').digest('base64url');

  // Anything that reaches the port can present a wrong link, so one audit row per refusal would let it grow
  // the audit without bound. A minute's first refusal is its own row; the rest of that minute are counted and
  // written as one row with the count once the minute is over (at the next refusal or sign-in after it, or when
  // the console closes): at most two rows a minute, and every refusal is still counted. The sign-in itself is
  // refused either way.
  let refused: { minute: number; more: number } | undefined;
  const flushRefused = (unlessMinute?: number) => {
    if (!refused || refused.minute === unlessMinute) return;
    if (refused.more > 0)
      audit.record({
        operation: WEB_AUDIT_OPERATION,
        decision: 'sign-in-refused',
        reason: `${refused.more} more login links that were unknown, already used or expired in the minute from ${new Date(refused.minute * 60_000).toISOString()}`,
        details: { count: refused.more, minute: new Date(refused.minute * 60_000).toISOString() },
      });
    refused = undefined;
  };
  const refuse = (at: number) => {
    const minute = Math.floor(at / 60_000);
    flushRefused(minute);
    if (refused) {
      refused.more += 1;
      return;
    }
    refused = { minute, more: 0 };
    audit.record({
      operation: WEB_AUDIT_OPERATION,
      decision: 'sign-in-refused',
      reason: 'a login link that is unknown, already used or expired',
    });
  };

  return {
    /** A new one-time login token for whoever asked (`cli`, `local:owner`). */
    issueLink(issuedTo: string): { token: string; expiresAt: number } {
      const token = secret();
      const at = clock.now();
      sessions.addLink(sha256(token), at, at + linkTtlMs, issuedTo);
      audit.record({
        operation: WEB_AUDIT_OPERATION,
        decision: 'link-issued',
        approver: issuedTo,
        reason: `a one-time login link, valid for ${Math.round(linkTtlMs / 60_000)} minutes`,
      });
      return { token, expiresAt: at + linkTtlMs };
    },

    /** Uses the link (once); undefined for an unknown, used or expired one. */
    signIn(linkToken: string | undefined, userAgent: string): SignedIn | undefined {
      if (!plausible(linkToken)) return undefined;
      const at = clock.now();
      const issuedTo = sessions.useLink(sha256(linkToken), at);
      if (issuedTo === undefined) {
        refuse(at);
        return undefined;
      }
      flushRefused();
      const cookieToken = secret();
      const id = crypto.randomBytes(6).toString('hex');
      const ua = userAgent.slice(0, 200);
      sessions.addSession({
        id,
        tokenHash: sha256(cookieToken),
        at,
        expiresAt: at + sessionTtlMs,
        issuedTo,
        userAgent: ua,
      });
      audit.record({
        operation: WEB_AUDIT_OPERATION,
        decision: 'signed-in',
        approver: issuedTo,
        details: { session: id, userAgent: ua },
      });
      return {
        cookieToken,
        session: {
          id,
          createdAt: at,
          expiresAt: at + sessionTtlMs,
          lastSeenAt: at,
          revokedAt: null,
          issuedTo,
          userAgent: ua,
        },
      };
    },

    /** The live session of this cookie, or undefined (none, unknown, revoked or expired). */
    authenticate(cookieToken: string | undefined): Authenticated | undefined {
      if (!plausible(cookieToken)) return undefined;
      const session = sessions.touch(sha256(cookieToken), clock.now());
      return session && { session, csrf: csrfOf(cookieToken) };
    },

    /** Whether `presented` is this session's CSRF token (constant time). */
    csrfMatches(auth: Authenticated, presented: unknown): boolean {
      if (typeof presented !== 'string' || presented.length !== auth.csrf.length) return false;
      return crypto.timingSafeEqual(Buffer.from(presented), Buffer.from(auth.csrf));
    },

    /** Writes the count of refused sign-ins not yet in the audit (the console is closing). */
    flushRefused(): void {
      flushRefused();
    },

    ...createWebSessionAdmin({ sessions, audit, clock }),
  };
}

export type WebAuth = ReturnType<typeof createWebAuth>;
