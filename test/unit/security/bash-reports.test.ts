import { beforeEach, describe, expect, it } from 'vitest';
import { type BashClassifier } from '../../../container-agent/src/bash-gate/index.ts';
import { createFrameBudget } from '../../../host/ipc/frame-budget.ts';
import type { RunIdentity } from '../../../host/security/decisions.ts';
import { createBashLedger } from '../../../host/security/policies/bash-ledger.ts';
import { createBashPolicy } from '../../../host/security/policies/bash-policy.ts';
import { createBashReports } from '../../../host/security/taint/bash-reports.ts';
import { createSecretReads } from '../../../host/security/taint/secret-reads.ts';
import { createCop } from '../../../host/security/cop/cop.ts';
import { createTaintRegistry } from '../../../host/security/taint/taint.ts';
import type { Store } from '../../../host/store/store.ts';
import { usePolicyGround } from '../../helpers/policy-ground.ts';

let classifier: BashClassifier;
let store: Store;
const ground = usePolicyGround();
beforeEach(() => ({ classifier, store } = ground()));

const identity: RunIdentity = {
  runId: 3,
  group: {
    id: 'fam',
    channel: 'local',
    chatId: 'fam',
    name: 'fam',
    isAdmin: false,
    networkMode: 'gateway',
    agentCursor: 0,
    createdAt: '',
    taint: { corruption: false, secret: false },
  },
  secretMounts: [],
};

function setup() {
  const taint = createTaintRegistry({
    initial: () => ({ corruption: false, secret: false }),
    onTainted: () => undefined,
  });
  const ledger = createBashLedger();
  const check = createBashPolicy({
    classifier,
    taint,
    cop: createCop({ complete: async () => '{"flagged":true,"reason":"unused"}' }),
    human: { ask: async () => false },
    scanSecrets: async () => [],
    audit: store.audit,
    ledger,
  });
  const ran = createBashReports({
    classifier,
    ledger,
    taint,
    audit: store.audit,
    secretReads: createSecretReads({ taint, audit: store.audit }),
  });
  return {
    taint,
    check,
    ran: (command: string, via: 'local' | 'host' = 'local') =>
      ran(identity, { command, via, reason: 'claimed by the container' }),
  };
}

describe('bash.ran reports', () => {
  it('audits every command the run executes, local or allowed by the host', async () => {
    const s = setup();
    expect(s.ran('ls -la')).toEqual({ missed: false });
    expect(await s.check(identity, 'curl -s https://example.org')).toMatchObject({ decision: 'allow' });
    expect(s.ran('curl -s https://example.org', 'host')).toEqual({ missed: false });
    const rows = store.audit.tail(10).filter((r) => r.operation === 'bash.ran');
    expect(rows.map((r) => [r.decision, r.reason])).toEqual([
      ['ran', 'local'],
      ['ran', 'allowed by the host'],
    ]);
  });

  it('calls a locally run command the host escalates a gate miss, audited as one', () => {
    const s = setup();
    const outcome = s.ran("sed ':a e id' notes.txt");
    expect(outcome).toMatchObject({
      missed: true,
      reason: expect.stringMatching(/^gate miss: the container ran it locally/),
    });
    expect(store.audit.tail(1)[0]).toMatchObject({ operation: 'bash.gate_miss', decision: 'stopped' });
  });

  it('calls a command "allowed by the host" a miss when the host never allowed it, and each grant counts once', async () => {
    const s = setup();
    expect(s.ran('curl -s https://example.org', 'host')).toMatchObject({ missed: true });
    await s.check(identity, 'wget -q https://example.org');
    expect(s.ran('wget -q https://example.org', 'host')).toEqual({ missed: false });
    expect(s.ran('wget -q https://example.org', 'host')).toMatchObject({ missed: true });
  });
});

describe('frame budget', () => {
  it('audits the first problems one by one, counts the rest, and stops the run once past the limit', () => {
    const budget = createFrameBudget({ auditFirst: 3, stopAfter: 5 });
    const steps = Array.from({ length: 9 }, () => budget.next());
    expect(steps).toEqual([
      'audit',
      'audit',
      'audit',
      'count',
      'count',
      'stop',
      'ignore',
      'ignore',
      'ignore',
    ]);
    expect(budget.unaudited()).toBe(3);
  });
});
