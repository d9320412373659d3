import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureAdminGroup } from '../../../host/admin/admin-group.ts';
import type { CliContext } from '../../../host/cli/cli-context.ts';
import { checkMemoryIndex } from '../../../host/cli/commands/doctor-memory-check.ts';
import { resolvePaths } from '../../../host/config/paths.ts';
import { createMemoryNotes } from '../../../host/memory/memory-notes.ts';
import { openStore } from '../../../host/store/store.ts';
import { runCli } from '../../helpers/run-cli.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();

function folders() {
  const root = tempDir();
  const dirs = { configDir: path.join(root, 'config'), dataDir: path.join(root, 'data') };
  fs.mkdirSync(dirs.configDir);
  const paths = resolvePaths({
    env: { CARAPACE_CONFIG_DIR: dirs.configDir, CARAPACE_DATA_DIR: dirs.dataDir },
    cwd: root,
  });
  return { dirs, paths, cli: (...argv: string[]) => runCli(dirs, argv) };
}

async function seed(f: ReturnType<typeof folders>) {
  fs.mkdirSync(f.dirs.dataDir, { recursive: true });
  const store = openStore({ file: f.paths.databaseFile });
  ensureAdminGroup(store);
  store.groups.add({ id: 'family', channel: 'local', chatId: 'family', name: 'Family', isAdmin: false });
  const people = [
    ['sam', 'Sam'],
    ['ann', 'Ann'],
  ] as const;
  for (let i = 0; i < 40; i += 1) {
    const [id, name] = people[i % 2] ?? people[0];
    store.messages.insert({
      groupId: i % 4 === 0 ? 'main' : 'family',
      channel: 'local',
      chatId: i % 4 === 0 ? 'main' : 'family',
      externalId: `m${i}`,
      senderId: id,
      senderName: name,
      text: i === 5 ? 'the plumber is Mario, 555 0199' : `chat ${i} about dinner and plans`,
      sentAt: new Date(Date.UTC(2026, 0, 1) + i * 3_600_000).toISOString(),
      triggers: false,
    });
  }
  const notes = createMemoryNotes({
    memory: store.memory,
    groupDir: (id) => path.join(f.paths.groupsDir, id),
  });
  // What the host's indexer does within seconds of each message.
  while (!store.memory.backfillStep(1000).done) {
    /* step */
  }
  await notes.write({
    groupId: 'family',
    text: 'Sam is vegetarian; dinner plans avoid meat',
    author: 'agent',
    runId: 3,
    taint: { corruption: true, secret: false },
  });
  store.close();
}

const ctxOf = (f: ReturnType<typeof folders>) => ({ paths: f.paths }) as CliContext;

describe('carapace memory', () => {
  it('searches a group with senders, lists and shows notes, and forgets a message for good', async () => {
    const f = folders();
    await seed(f);
    const found = await f.cli('memory', 'search', 'family', 'plumber');
    expect(found.code).toBe(0);
    expect(found.stdout).toMatch(
      /^message:\d+\t2026-01-01T05:00:00.000Z\tAnn \(ann\)\n {2}the plumber is Mario/m,
    );
    expect((await f.cli('memory', 'search', 'main', 'plumber')).stdout).toBe('Nothing found.\n');

    const list = await f.cli('memory', 'list', 'family');
    expect(list.stdout).toMatch(
      /^note:1\t.*\tagent\tmemory\/\d{4}-\d{2}-\d{2}-sam-is-vegetarian[a-z-]*-[0-9a-f]{6}\.md\t/,
    );
    expect((await f.cli('memory', 'show', 'note:1')).stdout).toContain('Sam is vegetarian');

    const ref = /^(message:\d+)/.exec(found.stdout)?.[1] ?? '';
    expect((await f.cli('memory', 'forget', 'main', ref)).code).toBe(1); // not that group's
    expect((await f.cli('memory', 'forget', 'family', ref)).stdout).toBe(`Forgot ${ref}.\n`);
    expect((await f.cli('memory', 'search', 'family', 'plumber')).stdout).toBe('Nothing found.\n');
    expect((await checkMemoryIndex(ctxOf(f))).ok).toBe(true);
  });

  it('doctor fails on a deliberately broken index, and reindex rebuilds exactly what was there', async () => {
    const f = folders();
    await seed(f);
    const before = (await f.cli('memory', 'search', 'family', 'dinner', '--limit', '50', '--json')).stdout;
    expect(JSON.parse(before)).toHaveLength(30);
    expect(await checkMemoryIndex(ctxOf(f))).toMatchObject({ ok: true });

    const store = openStore({ file: f.paths.databaseFile });
    store.db.prepare('DELETE FROM memory_fts WHERE rowid IN (SELECT id FROM messages LIMIT 3)').run();
    store.close();
    const broken = await checkMemoryIndex(ctxOf(f));
    expect(broken).toMatchObject({ ok: false, fix: expect.stringContaining('carapace memory reindex') });
    expect(broken.detail).toMatch(/3 stored messages or notes are not in the index/);

    const re = await f.cli('memory', 'reindex');
    expect(re.code).toBe(0);
    expect(re.stdout).toMatch(/Memory index rebuilt and checked/);
    expect((await f.cli('memory', 'search', 'family', 'dinner', '--limit', '50', '--json')).stdout).toBe(
      before,
    );
    expect(await checkMemoryIndex(ctxOf(f))).toMatchObject({ ok: true });
  });

  it('reindex takes in a note edited by hand, as written by the group’s runs', async () => {
    const f = folders();
    await seed(f);
    const store = openStore({ file: f.paths.databaseFile });
    const note = store.memory.notes('family')[0];
    store.close();
    if (!note) throw new Error('seeded note missing');
    fs.writeFileSync(path.join(f.paths.groupsDir, 'family', note.path), 'Sam eats fish now\n');
    const re = await f.cli('memory', 'reindex');
    expect(re.stdout).toMatch(/family: 1 notes changed on disk/);
    const hits = JSON.parse(
      (await f.cli('memory', 'search', 'family', 'fish', '--json')).stdout,
    ) as unknown[];
    expect(hits).toEqual([
      expect.objectContaining({ kind: 'note', author: 'agent', taint: { corruption: true, secret: false } }),
    ]);
    expect((await f.cli('memory', 'search', 'family', 'vegetarian')).stdout).toBe('Nothing found.\n');
  });

  it('a restored backup searches exactly as the live one did', async () => {
    const f = folders();
    await seed(f);
    const queries = [
      ['family', 'dinner'],
      ['family', 'plumber'],
      ['family', 'vegetarian'],
      ['main', 'plans'],
    ];
    const answers = async (g: ReturnType<typeof folders>) =>
      Promise.all(
        queries.map(
          async ([group, q]) =>
            (await g.cli('memory', 'search', group ?? '', q ?? '', '--limit', '50', '--json')).stdout,
        ),
      );
    const live = await answers(f);
    const archive = path.join(tempDir(), 'backup.tar.gz');
    const b = await f.cli('backup', archive);
    expect(b.code, b.stderr).toBe(0);
    const g = folders();
    const r = await g.cli('restore', archive);
    expect(r.code, r.stderr).toBe(0);
    expect(await answers(g)).toEqual(live);
    expect(await checkMemoryIndex(ctxOf(g))).toMatchObject({ ok: true });
  });
});
