import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureAdminGroup } from '../../../host/admin/admin-group.ts';
import { openStore } from '../../../host/store/store.ts';
import { postToSocketChannel } from '../../fakes/socket-channel.ts';
import { ROOT, startProcess, waitFor } from '../../helpers/processes.ts';

const HOST_ENTRY = 'test/fakes/fake-runner-host.ts';

describe('crash recovery', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-crash-'));
  const dataDir = path.join(dir, 'data');
  const env = { CARAPACE_CONFIG_DIR: path.join(dir, 'cfg'), CARAPACE_DATA_DIR: dataDir };
  const fakeSocket = path.join(dataDir, 'fake-channel.sock');
  const deliveriesFile = path.join(dataDir, 'fake-deliveries.jsonl');
  const deliveries = () =>
    fs.existsSync(deliveriesFile)
      ? fs
          .readFileSync(deliveriesFile, 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as { text: string; key: string; pid: number })
      : [];
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('answers every message exactly once across a SIGKILL with runs in flight and a reply half-delivered', async () => {
    const store = openStore({ file: path.join(dataDir, 'carapace.db') });
    ensureAdminGroup(store);
    store.groups.add({ id: 'pals', channel: 'fake', chatId: 'c1', name: 'Pals', isAdmin: false });
    store.groups.add({ id: 'crew', channel: 'fake', chatId: 'c2', name: 'Crew', isAdmin: false });
    store.close();

    const first = await startProcess(HOST_ENTRY, env);
    const firstExit = new Promise<NodeJS.Signals | null>((r) => first.child.on('exit', (_c, s) => r(s)));

    // 1. Answered normally before the crash.
    await postToSocketChannel(fakeSocket, { chatId: 'c1', externalId: 'm1', text: '@Andy one' });
    await waitFor('the first reply', () => deliveries().length === 1);

    // 2. A console message whose run replies and then hangs; its `send` client stays connected across the crash.
    const send = spawn(
      process.execPath,
      [path.join(ROOT, 'bin/carapace.js'), 'send', '--timeout', '60', '[hang] two'],
      {
        cwd: ROOT,
        env: { ...process.env, ...env },
      },
    );
    let sendOut = '';
    send.stdout.on('data', (d: Buffer) => (sendOut += d.toString()));
    const sendExit = new Promise<number | null>((r) => send.on('close', r));
    await waitFor('the hanging run to reply', () => sendOut.includes('echo: [hang] two'));

    // 3. A run still working (not replied) when the host dies.
    await postToSocketChannel(fakeSocket, {
      chatId: 'c1',
      externalId: 'm3',
      text: '@Andy [until-restart] three',
    });
    // 4. A reply that kills the host while it is being delivered.
    await postToSocketChannel(fakeSocket, {
      chatId: 'c2',
      externalId: 'm4',
      text: '@Andy [die-during-delivery] four',
    });
    expect(await firstExit).toBe('SIGKILL');
    expect(deliveries().map((d) => d.text)).toEqual(['echo: @Andy one']);

    const second = await startProcess(HOST_ENTRY, env);
    try {
      // The channel redelivers a message it is unsure about; the host must drop the duplicate.
      await postToSocketChannel(fakeSocket, { chatId: 'c1', externalId: 'm1', text: '@Andy one' });
      await waitFor('all replies after the restart', () => deliveries().length >= 3);
      expect(await sendExit).toBe(0);
      // The sentinels: a later message in each chat, answered after anything still owed to it (each group
      // runs and each chat delivers in order), so a wrongful extra reply would show up before theirs.
      await postToSocketChannel(fakeSocket, { chatId: 'c1', externalId: 'm5', text: '@Andy sentinel one' });
      await postToSocketChannel(fakeSocket, { chatId: 'c2', externalId: 'm6', text: '@Andy sentinel two' });
      await waitFor('the sentinels answered', () => deliveries().length >= 5);

      const texts = deliveries()
        .map((d) => d.text)
        .sort();
      expect(texts).toEqual([
        'echo: @Andy [die-during-delivery] four',
        'echo: @Andy [until-restart] three',
        'echo: @Andy one',
        'echo: @Andy sentinel one',
        'echo: @Andy sentinel two',
      ]);
      expect(new Set(deliveries().map((d) => d.key)).size).toBe(5);
      expect(deliveries().find((d) => d.text.includes('four'))?.pid).toBe(second.child.pid);
      expect(sendOut.match(/echo: \[hang\] two/g)).toHaveLength(1);

      const check = openStore({ file: path.join(dataDir, 'carapace.db') });
      try {
        expect(check.outbox.pendingCount()).toBe(0);
        // The sentinels' runs record their end just after their replies went out.
        await waitFor(
          'no message left unanswered',
          () => check.messages.groupsWithPendingTriggers().length === 0,
        );
        const statuses = check.runs.recent(20).map((r) => `${r.groupId}:${r.status}`);
        expect(statuses).toContain('main:interrupted');
        expect(statuses).toContain('pals:interrupted');
        // Exactly one reply row per answered message: nothing answered twice.
        const rows = check.db.prepare('SELECT text FROM outbox ORDER BY id').all() as { text: string }[];
        expect(rows.map((r) => r.text).sort()).toEqual([
          'echo: @Andy [die-during-delivery] four',
          'echo: @Andy [until-restart] three',
          'echo: @Andy one',
          'echo: @Andy sentinel one',
          'echo: @Andy sentinel two',
          'echo: [hang] two',
        ]);
      } finally {
        check.close();
      }
    } finally {
      second.child.kill('SIGTERM');
      await new Promise((r) => second.child.on('exit', r));
    }
  }, 60_000);
});
