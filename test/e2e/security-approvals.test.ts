/**
 * Human approval through real containers (DESIGN.md, "Human approval"): only `approve <id>` from the owner
 * in the admin chat decides a request; the same words in another group are an ordinary message. A
 * request with no answer expires (a deny), a decided request cannot be decided again, and a request still
 * waiting when the host stops is never carried out. The flagged commands leave a file behind when they
 * run, so "blocked" is proven, not just reported.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AuditRow } from '../../host/store/audit-store.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import {
  auditMark,
  auditSince,
  unaskedSend,
  bash,
  detailsOf,
  nextApproval,
  ownerSays,
  resultsOf,
  runTools,
  securityResponder,
} from '../fakes/security-responders.ts';
import { eventually, startE2eHost, type E2eHost } from './e2e-harness.ts';

const APPROVAL_TIMEOUT_MS = 10_000;
const tag = () => crypto.randomBytes(4).toString('hex');

await describeDocker('e2e security: approvals come only from the owner in the admin chat, once', () => {
  let h: E2eHost;
  const seenApprovals = new Set<string>();
  const ran = (group: string, file: string) => fs.existsSync(path.join(h.paths.groupsDir, group, file));
  /** The Cop flags it (scripted on the word FLAGGED); it creates `file` in the group folder if it runs. */
  const flaggedCommand = (file: string) => bash(`touch ${file} && mkfifo fifo-${file}`);

  beforeAll(async () => {
    h = await startE2eHost({
      config: { runs: { max_attempts: 1 }, security: { approval_timeout_ms: APPROVAL_TIMEOUT_MS } },
    });
    const added = await h.cli(['groups', 'add', 'alpha', '--channel', 'local']);
    expect(added.code, added.stderr).toBe(0);
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  it('"approve <id>" in a non-admin group is an ordinary message: the request still expires and the command never runs', async () => {
    const file = `FLAGGED-expire-${tag()}`;
    h.fake.setResponder(securityResponder({ alpha: runTools([flaggedCommand(file)]) }));
    const mark = auditMark(h);
    const sent = h.send('alpha', '@Andy run the flagged command');
    const ask = await nextApproval(h, seenApprovals, file);

    const attempt = await h.send('alpha', `approve ${ask.id}`);
    expect(attempt.code).toBe(0);
    expect(attempt.stderr).toMatch(/stored as context/);
    // Stored as a message of alpha (context for its agent), not taken as a decision.
    expect(h.messageId('alpha', `approve ${ask.id}`)).toBeGreaterThan(0);
    expect(h.host.store.approvals.get(ask.id)?.status).toBe('pending');

    const res = await sent;
    expect(res.code).toBe(0);
    expect(resultsOf(res.stdout)).toEqual([
      'Blocked: this command was not run. Reason: not approved by the owner (the Cop flagged it: scripted flag: the parameters contain "FLAGGED")',
    ]);
    expect(ran('alpha', file)).toBe(false);
    expect(h.host.store.approvals.get(ask.id)).toMatchObject({ status: 'expired', decidedBy: 'timeout' });

    const rows = auditSince(h, mark).filter((r) => !unaskedSend(r));
    expect(rows.map((r) => [r.operation, r.decision, r.groupId])).toEqual([
      ['bash.cop', 'flagged', 'alpha'],
      ['bash', 'approval-asked', 'alpha'],
      ['admin.command', 'ignored', 'alpha'],
      ['bash', 'approval-expired', 'alpha'],
      ['bash', 'denied', 'alpha'],
    ]);
    const ignored = rows[2] as AuditRow;
    expect(ignored.reason).toBe('approval commands are only accepted in the admin chat');
    expect(detailsOf(ignored)).toMatchObject({ command: 'approve', approvalId: ask.id });
    expect(rows[3]?.reason).toBe('the owner did not answer in time (counts as deny)');

    // Too late in the admin chat as well: an expired request counts as denied.
    const late = await ownerSays(h, `approve ${ask.id}`);
    expect(late).toMatch(
      new RegExp(`^Request ${ask.id} expired at .*; it counts as denied and nothing changed\\.`),
    );
    expect(ran('alpha', file)).toBe(false);
  }, 90_000);

  it('a decided request cannot be decided again: a replayed "approve" or a late "deny" is refused', async () => {
    const file = `FLAGGED-once-${tag()}`;
    h.fake.setResponder(securityResponder({ alpha: runTools([flaggedCommand(file)]) }));
    const mark = auditMark(h);
    const sent = h.send('alpha', '@Andy run it once');
    const ask = await nextApproval(h, seenApprovals, file);
    expect(await ownerSays(h, `approve ${ask.id}`)).toBe(
      `Approved ${ask.id}: bash may run once, with the parameters shown.`,
    );
    const res = await sent;
    expect(resultsOf(res.stdout)).toEqual(['exit code 0']);
    expect(ran('alpha', file)).toBe(true);

    const replay = await ownerSays(h, `approve ${ask.id}`);
    expect(replay).toMatch(
      new RegExp(
        `^Request ${ask.id} was approved by local:owner at .* and has already run; nothing changed\\.$`,
      ),
    );
    const lateDeny = await ownerSays(h, `deny ${ask.id}`);
    expect(lateDeny).toBe(replay);
    expect(await ownerSays(h, 'approve zz22zz')).toBe(
      'No approval request has the id "zz22zz". Send "pending" to list the open ones.',
    );
    expect(await ownerSays(h, 'pending')).toBe('No approval requests are waiting.');

    // One grant, one execution; the replays changed nothing.
    const decisions = auditSince(h, mark)
      .filter((r) => r.operation === 'bash')
      .map((r) => r.decision);
    expect(decisions).toEqual(['approval-asked', 'approval-granted', 'approval-executed', 'allowed']);
    expect(h.host.store.approvals.get(ask.id)?.status).toBe('executed');
  }, 90_000);

  it('a request still waiting when the host stops expires, and the command never runs', async () => {
    const file = `FLAGGED-stop-${tag()}`;
    h.fake.setResponder(securityResponder({ alpha: runTools([flaggedCommand(file)]) }));
    const mark = auditMark(h);
    // The CLI keeps waiting for a host that went away; its own timeout ends it.
    const sent = h.send('alpha', '@Andy run it while the host goes away', 15);
    const ask = await nextApproval(h, seenApprovals, file);
    await h.host.stop('stopped by the test while an approval waits');

    const res = await sent;
    expect(res.code).toBe(3);
    expect(ran('alpha', file)).toBe(false);
    const names = h.started('alpha').map((n) => `/${n}`);
    await eventually('the run containers of alpha to be gone', async () => {
      const all = await h.docker.listContainers({ all: true });
      return all.every((c) => !c.Names.some((n) => names.includes(n)));
    });

    // The host is gone; its audit trail is read with the CLI, as the owner would.
    const audit = await h.cli(['audit', '--json', '--tail', '50']);
    expect(audit.code).toBe(0);
    const rows = audit.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as AuditRow)
      .filter((r) => r.id > mark);
    expect(rows.map((r) => [r.operation, r.decision])).toEqual([
      ['bash.cop', 'flagged'],
      ['bash', 'approval-asked'],
      ['bash', 'approval-expired'],
      ['bash', 'denied'],
    ]);
    expect(detailsOf(rows[2] as AuditRow).approvalId).toBe(ask.id);
    expect(rows[2]?.reason).toBe('the host stopped while the request waited');
  }, 90_000);
});
