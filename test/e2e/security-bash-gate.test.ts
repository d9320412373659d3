/**
 * The bash gate (DESIGN.md, "Security policy"), through real containers: a local command runs in the
 * container without asking; an escalated one asks the host, which decides from the run's taint — none →
 * allow; corruption → the Cop (a flag goes to the owner); corruption + secret → the owner for network
 * commands; a secret in the command → the owner. Each command leaves a file behind when it runs, so a
 * blocked command is proven not to have run.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeDocker } from '../helpers/docker-available.ts';
import {
  auditMark,
  auditSince,
  unaskedSend,
  bash,
  copReviews,
  detailsOf,
  nextApproval,
  ownerSays,
  resultsOf,
  runReply,
  runTools,
  securityResponder,
} from '../fakes/security-responders.ts';
import { startE2eHost, type E2eHost, type E2eHostOptions } from './e2e-harness.ts';

const tag = () => crypto.randomBytes(4).toString('hex');

await describeDocker('e2e security: the bash gate decides by taint', () => {
  let h: E2eHost;
  const seenApprovals = new Set<string>();

  /** True when a command of `group` created `file` in the group folder. */
  const ran = (group: string, file: string) => fs.existsSync(path.join(h.paths.groupsDir, group, file));
  /**
   * Decision rows of the newest run of `group` written after `mark`, as [operation, decision, taint]; the
   * `bash.ran` report of each executed command is left out (security-gate-isolation.test.ts covers it).
   */
  const decisions = (group: string, mark: number) => {
    const runId = h.runs(group).at(-1)?.id;
    return auditSince(h, mark)
      .filter((r) => r.runId === runId && r.operation !== 'bash.ran' && !unaskedSend(r))
      .map((r) => [r.operation, r.decision, r.taint]);
  };
  const owner = (command: string) => ownerSays(h, command);

  beforeAll(async () => {
    // The harness types leave [groups] out; its config merge passes it through as written.
    const config = {
      runs: { max_attempts: 1, max_concurrent: 3 },
      groups: { vault: { contains_secrets: true } },
    } as unknown as E2eHostOptions['config'];
    h = await startE2eHost({ config });
    await h.addLocalGroups('alpha', 'vault');
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  it('a local command runs in the container without asking the host', async () => {
    const t = tag();
    h.fake.setResponder(
      securityResponder({ main: runTools([bash(`echo local-${t} > local-${t}.txt && cat local-${t}.txt`)]) }),
    );
    const mark = auditMark(h);
    const res = await h.send('main', 'write a file');
    expect(res.code).toBe(0);
    expect(resultsOf(res.stdout)).toEqual([`exit code 0\nstdout:\nlocal-${t}`]);
    expect(fs.readFileSync(path.join(h.paths.groupsDir, 'main', `local-${t}.txt`), 'utf8')).toBe(
      `local-${t}\n`,
    );
    // The host was never asked: no bash decision of any kind; it only heard that the command ran.
    expect(decisions('main', mark)).toEqual([]);
    const runId = h.runs('main').at(-1)?.id;
    expect(
      auditSince(h, mark)
        .filter((r) => r.runId === runId && !unaskedSend(r))
        .map((r) => [r.operation, r.decision, r.reason]),
    ).toEqual([['bash.ran', 'ran', 'local']]);
  }, 60_000);

  it('the admin group (no taint): escalated commands are allowed; an allowed network command taints the run, so the next one goes to the Cop; a secret in a command goes to the owner', async () => {
    const t = tag();
    const fromRequest = h.fake.requests.length;
    const secretCommand = `touch key-${t} && mkfifo keyfifo-${t} # ${h.providerKey}`;
    h.fake.setResponder(
      securityResponder({
        main: runTools([
          bash(`touch esc-${t} && mkfifo fifo-${t}`),
          bash(`touch net-${t} && curl -sS -m 2 http://127.0.0.1:9/`),
          bash(`touch after-${t} && mkfifo fifo2-${t}`),
          bash(secretCommand),
        ]),
      }),
    );
    const mark = auditMark(h);
    const sent = h.send('main', 'run some commands');
    const ask = await nextApproval(h, seenApprovals, `key-${t}`);
    // The owner is shown the exact command, with the held key redacted.
    expect(ask.text).toContain('Operation: "bash"');
    expect(ask.text).toContain(`touch key-${t} && mkfifo keyfifo-${t} # [REDACTED]`);
    expect(ask.text).not.toContain(h.providerKey);
    expect(ask.text).toMatch(/Reason given: "the command contains a secret/);
    expect(await owner(`deny ${ask.id}`)).toBe(`Denied ${ask.id}: bash will not run.`);

    const res = await sent;
    expect(res.code).toBe(0);
    // The admin chat's CLI also printed the approval request and the answer to "deny".
    const replyText = runReply(h, 'main');
    expect(res.stdout.endsWith(`${replyText}\n`)).toBe(true);
    expect(res.stdout).toContain(`Approval needed: ${ask.id}`);
    const [esc, net, after, secret] = resultsOf(replyText);
    expect(esc).toBe('exit code 0');
    // The network command ran (the host allowed it); whether curl exists or connects does not matter here.
    expect(net).toMatch(/^exit code \d+/);
    expect(after).toBe('exit code 0');
    expect(secret).toMatch(
      /^Blocked: this command was not run\. Reason: not approved by the owner \(the command contains a secret/,
    );
    expect([ran('main', `esc-${t}`), ran('main', `net-${t}`), ran('main', `after-${t}`)]).toEqual([
      true,
      true,
      true,
    ]);
    expect(ran('main', `key-${t}`)).toBe(false);

    expect(decisions('main', mark)).toEqual([
      ['bash', 'allowed', 'none'],
      ['bash', 'allowed', 'none'],
      // The network command's output is now in the run's context: corrupted from here on.
      ['bash.cop', 'passed', 'corruption'],
      ['bash', 'allowed', 'corruption'],
      // A secret goes to the owner whatever the taint, without the Cop.
      ['bash', 'approval-asked', null],
      ['bash', 'approval-denied', null],
      ['bash', 'denied', 'corruption'],
    ]);
    const bashRows = auditSince(h, mark).filter((r) => r.operation === 'bash' && r.taint !== null);
    expect(bashRows.map((r) => detailsOf(r).network)).toEqual([false, true, false, false]);
    expect(bashRows[0]?.reason).toBe('untainted run (mkfifo creates special files)');
    expect(bashRows[2]?.reason).toBe('the Cop passed it (mkfifo creates special files)');
    expect(JSON.stringify(auditSince(h, mark))).not.toContain(h.providerKey);

    // Exactly one Cop review: the command after the network one, with the taint the host stated.
    const reviews = copReviews(h.fake.requests, fromRequest);
    expect(reviews.map((r) => [r.kind, r.operation, r.params, r.taint])).toEqual([
      [
        'bash_command',
        'bash',
        { command: `touch after-${t} && mkfifo fifo2-${t}` },
        { corruption: true, secret: false },
      ],
    ]);
  }, 90_000);

  it('a non-admin group (corrupted from the start): local commands run unasked; an escalated one goes to the Cop and runs when it passes', async () => {
    const t = tag();
    const fromRequest = h.fake.requests.length;
    h.fake.setResponder(
      securityResponder({
        alpha: runTools([bash(`echo hi-${t}`), bash(`touch cop-${t} && mkfifo copfifo-${t}`)]),
      }),
    );
    const mark = auditMark(h);
    const res = await h.send('alpha', '@Andy run two commands');
    expect(res.code).toBe(0);
    expect(resultsOf(res.stdout)).toEqual([`exit code 0\nstdout:\nhi-${t}`, 'exit code 0']);
    expect(ran('alpha', `cop-${t}`)).toBe(true);
    expect(decisions('alpha', mark)).toEqual([
      ['bash.cop', 'passed', 'corruption'],
      ['bash', 'allowed', 'corruption'],
    ]);
    const reviews = copReviews(h.fake.requests, fromRequest);
    expect(reviews.map((r) => r.params)).toEqual([{ command: `touch cop-${t} && mkfifo copfifo-${t}` }]);
    expect(reviews[0]?.taint).toEqual({ corruption: true, secret: false });
    expect(approvalsOf(mark)).toEqual([]);
  }, 60_000);

  it('a command the Cop flags goes to the owner: "deny" blocks it, "approve" lets it run', async () => {
    const t = tag();
    const denied = `touch FLAGGED-deny-${t} && mkfifo f1-${t}`;
    const approved = `touch FLAGGED-approve-${t} && mkfifo f2-${t}`;
    h.fake.setResponder(securityResponder({ alpha: runTools([bash(denied), bash(approved)]) }));
    const mark = auditMark(h);
    const sent = h.send('alpha', '@Andy run the two flagged commands');

    const first = await nextApproval(h, seenApprovals, `FLAGGED-deny-${t}`);
    expect(first.text).toContain('Asked by: group "alpha", run ');
    expect(first.text).toContain(`"command": ${JSON.stringify(denied)}`);
    expect(first.text).toContain('the Cop flagged it: scripted flag');
    expect(await owner(`deny ${first.id}`)).toBe(`Denied ${first.id}: bash will not run.`);

    const second = await nextApproval(h, seenApprovals, `FLAGGED-approve-${t}`);
    expect(await owner(`approve ${second.id}`)).toBe(
      `Approved ${second.id}: bash may run once, with the parameters shown.`,
    );

    const res = await sent;
    expect(res.code).toBe(0);
    const [one, two] = resultsOf(res.stdout);
    expect(one).toBe(
      'Blocked: this command was not run. Reason: not approved by the owner (the Cop flagged it: scripted flag: the parameters contain "FLAGGED")',
    );
    expect(two).toBe('exit code 0');
    expect(ran('alpha', `FLAGGED-deny-${t}`)).toBe(false);
    expect(ran('alpha', `FLAGGED-approve-${t}`)).toBe(true);

    expect(decisions('alpha', mark)).toEqual([
      ['bash.cop', 'flagged', 'corruption'],
      ['bash', 'approval-asked', null],
      ['bash', 'approval-denied', null],
      ['bash', 'denied', 'corruption'],
      ['bash.cop', 'flagged', 'corruption'],
      ['bash', 'approval-asked', null],
      ['bash', 'approval-granted', null],
      ['bash', 'approval-executed', null],
      ['bash', 'allowed', 'corruption'],
    ]);
    const granted = auditSince(h, mark).find((r) => r.decision === 'approval-granted');
    expect(granted?.approver).toBe('local:owner');
    expect(
      auditSince(h, mark)
        .filter((r) => r.approver === 'owner')
        .map((r) => r.decision),
    ).toEqual(['allowed']);
  }, 90_000);

  it('a run with corruption and secret taint: a network command goes to the owner without the Cop; others still go to the Cop', async () => {
    const t = tag();
    const fromRequest = h.fake.requests.length;
    const network = `touch vnet-${t} && curl -sS -m 2 http://127.0.0.1:9/`;
    h.fake.setResponder(
      securityResponder({
        vault: runTools([bash(network), bash(`touch vlocal-${t} && mkfifo vfifo-${t}`)]),
      }),
    );
    const mark = auditMark(h);
    const sent = h.send('vault', '@Andy fetch something');
    const ask = await nextApproval(h, seenApprovals, `vnet-${t}`);
    expect(ask.text).toContain('a run that read secrets and untrusted content wants the network');
    expect(await owner(`deny ${ask.id}`)).toBe(`Denied ${ask.id}: bash will not run.`);
    // A chat is a public sink too: the reply of such a run waits for the owner as well.
    const replyAsk = await nextApproval(h, seenApprovals, 'Operation: "message.send"');
    expect(replyAsk.text).toContain('a run that read secrets and untrusted content wants to send a message');
    await owner(`approve ${replyAsk.id}`);

    const res = await sent;
    expect(res.code).toBe(0);
    const [net, other] = resultsOf(res.stdout);
    expect(net).toBe(
      'Blocked: this command was not run. Reason: not approved by the owner (a run that read secrets and untrusted content wants the network)',
    );
    expect(other).toBe('exit code 0');
    expect(ran('vault', `vnet-${t}`)).toBe(false);
    expect(ran('vault', `vlocal-${t}`)).toBe(true);
    expect(decisions('vault', mark)).toEqual([
      ['bash', 'approval-asked', null],
      ['bash', 'approval-denied', null],
      ['bash', 'denied', 'corruption+secret'],
      ['bash.cop', 'passed', 'corruption+secret'],
      ['bash', 'allowed', 'corruption+secret'],
      ['message.send', 'approval-asked', null],
      ['message.send', 'approval-granted', null],
      ['message.send', 'approval-executed', null],
      ['message.send', 'allowed', 'corruption+secret'],
    ]);
    // The Cop saw only the non-network command, with both taints stated.
    const reviews = copReviews(h.fake.requests, fromRequest);
    expect(reviews.map((r) => [r.params, r.taint])).toEqual([
      [{ command: `touch vlocal-${t} && mkfifo vfifo-${t}` }, { corruption: true, secret: true }],
    ]);
  }, 90_000);

  function approvalsOf(mark: number) {
    return auditSince(h, mark).filter((r) => r.decision.startsWith('approval-'));
  }
});
