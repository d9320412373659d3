import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { openStore } from '../../store/store.ts';
import { systemClock } from '../../time/clock.ts';
import { createWebSessionAdmin } from '../../web/web-auth.ts';
import { hostClientWithin, timeoutSeconds } from '../host-client.ts';
import { UsageError, type CliContext } from '../cli-context.ts';
import { webUsage } from '../command-usage.ts';

/**
 * `carapace web login`: asks the running host for a one-time sign-in link to its web console. Reaching the
 * host's socket (file permissions: the owner's account) is what entitles one to a link.
 * `carapace web sessions|revoke`: the Sessions page's list and revoke, on the store directly (as `carapace
 * audit`), so a session can be ended while the host is stopped too; the host reads the store on every request.
 */
export async function webCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      timeout: { type: 'string', default: '10' },
      json: { type: 'boolean', default: false },
      all: { type: 'boolean', default: false },
    },
  });
  const [sub, ...rest] = positionals;
  if (sub === 'login' && rest.length === 0) {
    const link = await hostClientWithin(ctx, timeoutSeconds(values.timeout) * 1000).webLogin();
    ctx.out(link.url);
    ctx.err(`Open it once, before ${link.expiresAt}; it signs one browser in.`);
    return 0;
  }
  if (sub === 'sessions' && rest.length === 0)
    return withSessions(ctx, (admin) => listSessions(ctx, admin, values.json));
  if (sub === 'revoke' && (values.all ? rest.length === 0 : rest.length === 1))
    return withSessions(ctx, (admin) => revokeSessions(ctx, admin, values.all ? undefined : rest[0]));
  throw new UsageError(`usage: ${webUsage}`);
}

type SessionAdmin = ReturnType<typeof createWebSessionAdmin>;

function withSessions(ctx: CliContext, fn: (admin: SessionAdmin) => number): number {
  if (!fs.existsSync(ctx.paths.databaseFile)) {
    ctx.err(`no database at ${ctx.paths.databaseFile} yet; nobody has signed in to the web console`);
    return 0;
  }
  const store = openStore({ file: ctx.paths.databaseFile });
  try {
    return fn(createWebSessionAdmin({ sessions: store.webSessions, audit: store.audit, clock: systemClock }));
  } finally {
    store.close();
  }
}

const iso = (ms: number) => new Date(ms).toISOString();

function listSessions(ctx: CliContext, admin: SessionAdmin, json: boolean): number {
  const sessions = admin.list();
  // Said on stderr, so `--json` output stays a clean (empty) stream.
  if (sessions.length === 0) ctx.err('no signed-in web console sessions');
  for (const s of sessions) {
    const row = {
      id: s.id,
      createdAt: iso(s.createdAt),
      lastSeenAt: iso(s.lastSeenAt),
      expiresAt: iso(s.expiresAt),
      issuedTo: s.issuedTo,
      userAgent: s.userAgent,
    };
    ctx.out(json ? JSON.stringify(row) : Object.values(row).join('\t'));
  }
  return 0;
}

/** Revokes the one live session whose id starts with `prefix`, or every one (`--all`). */
function revokeSessions(ctx: CliContext, admin: SessionAdmin, prefix: string | undefined): number {
  const live = admin.list();
  const chosen = prefix === undefined ? live : live.filter((s) => s.id.startsWith(prefix));
  if (prefix !== undefined && chosen.length !== 1) {
    ctx.err(
      chosen.length === 0
        ? `no live web console session starts with "${prefix}"; carapace web sessions lists them`
        : `"${prefix}" names ${chosen.length} sessions; give more of the id (carapace web sessions lists them)`,
    );
    return 1;
  }
  for (const s of chosen) if (admin.revoke(s.id, 'cli')) ctx.out(`revoked ${s.id}`);
  if (chosen.length === 0) ctx.err('no signed-in web console sessions');
  return 0;
}
