/**
 * The security rules the host's wiring used to hold: the taint a run starts with, and "anything but an
 * explicit, matching, first-use approval is a deny" (host/security/initial-taint.ts, human-approval.ts),
 * against the real approval service and database.
 */
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createApprovalService, type ApprovalService } from '../../../host/admin/approval-service.ts';
import { createHumanApproval } from '../../../host/security/policies/human-approval.ts';
import { initialRunTaint } from '../../../host/security/taint/initial-taint.ts';
import type { RunIdentity } from '../../../host/security/decisions.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
const clean = { corruption: false, secret: false };

describe('the taint a run starts with', () => {
  it('is clean only in the admin group with no taint left over and no secrets declared', () => {
    expect(initialRunTaint({ isAdmin: true, taint: clean }, false)).toEqual(clean);
  });

  it('is corrupted in every other group, and when the group is unknown (fail closed)', () => {
    expect(initialRunTaint({ isAdmin: false, taint: clean }, false)).toEqual({
      corruption: true,
      secret: false,
    });
    expect(initialRunTaint(undefined, false).corruption).toBe(true);
  });

  it('keeps what earlier runs of the group left until the owner clears it', () => {
    expect(
      initialRunTaint({ isAdmin: true, taint: { corruption: true, secret: false } }, false).corruption,
    ).toBe(true);
    expect(initialRunTaint({ isAdmin: true, taint: { corruption: false, secret: true } }, false).secret).toBe(
      true,
    );
  });

  it('is secret in a group the owner declared contains_secrets', () => {
    expect(initialRunTaint({ isAdmin: true, taint: clean }, true)).toEqual({
      corruption: false,
      secret: true,
    });
  });
});

describe('a human approval', () => {
  const open: { store: Store; service: ApprovalService }[] = [];
  afterEach(() => {
    for (const o of open.splice(0)) {
      o.service.close();
      o.store.close();
    }
  });

  function setup(notify: (id: string) => Promise<void> = async () => undefined) {
    const store = openStore({ file: path.join(tempDir(), 'carapace.db') });
    store.groups.add({ id: 'family', channel: 'local', chatId: 'family', name: 'Family', isAdmin: false });
    const run = store.runs.start('family', 1, 0);
    const errors: unknown[] = [];
    const service = createApprovalService({
      store,
      redact: (s) => s,
      logger: pino({ level: 'silent' }),
      notifyAdmin: (_text, { approvalId }) => notify(approvalId),
    });
    open.push({ store, service });
    const ended = new AbortController();
    const human = createHumanApproval({
      approvals: service,
      signalFor: () => ended.signal,
      logger: { error: (obj: unknown) => void errors.push(obj) } as never,
    });
    const identity: RunIdentity = { runId: run.id, group: store.groups.get('family')!, secretMounts: [] };
    return { service, human, identity, ended, errors };
  }

  it('is granted on the owner’s approve, for exactly those parameters, once', async () => {
    const late: { svc?: ApprovalService } = {};
    const { service, human, identity } = setup(async (id) => {
      queueMicrotask(() => late.svc!.decide(id, 'approve', 'local:owner'));
    });
    late.svc = service;
    await expect(human.ask(identity, 'bash', 'cleans the build', { command: 'rm -rf build' })).resolves.toBe(
      true,
    );
  });

  it('is a deny when the owner denies', async () => {
    const late: { svc?: ApprovalService } = {};
    const { service, human, identity } = setup(async (id) => {
      queueMicrotask(() => late.svc!.decide(id, 'deny', 'local:owner'));
    });
    late.svc = service;
    await expect(human.ask(identity, 'bash', 'why', { command: 'x' })).resolves.toBe(false);
  });

  it('is a deny when the run ends while the owner has not answered', async () => {
    const { human, identity, ended } = setup(async () => {
      queueMicrotask(() => ended.abort());
    });
    await expect(human.ask(identity, 'bash', 'why', { command: 'x' })).resolves.toBe(false);
  });

  it('is a deny when the request cannot reach the owner', async () => {
    const { human, identity } = setup(async () => {
      throw new Error('no admin chat answers');
    });
    await expect(human.ask(identity, 'bash', 'why', { command: 'x' })).resolves.toBe(false);
  });

  it('is a deny, logged, when the request itself fails', async () => {
    const { human, identity, errors } = setup();
    // An operation name is required: the service refuses the request before anyone is asked.
    await expect(human.ask(identity, '', 'why', { command: 'x' })).resolves.toBe(false);
    expect(errors).toHaveLength(1);
  });
});
