import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { matchExpression } from '../../../host/store/memory-store.ts';
import { groupTerm, indexTerms } from '../../../host/store/memory-terms.ts';
import type { NewMessage } from '../../../host/store/messages-store.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
let file: string;
let store: Store;
let seq = 0;
let clock = new Date('2026-01-01T00:00:00.000Z');

beforeEach(() => {
  file = path.join(tempDir(), 'carapace.db');
  clock = new Date('2026-01-01T00:00:00.000Z');
  store = openStore({ file, now: () => clock });
  store.groups.add({ id: 'main', channel: 'local', chatId: 'admin', name: 'Admin', isAdmin: true });
  store.groups.add({ id: 'family', channel: 'local', chatId: 'family', name: 'Family', isAdmin: false });
  store.groups.add({ id: 'work', channel: 'local', chatId: 'work', name: 'Work', isAdmin: false });
});
afterEach(() => store.close());

/** Stores a message as ingest does; it waits for the indexer (search reads it directly meanwhile). */
function sayWaiting(groupId: string, text: string, fields: Partial<NewMessage> = {}): number {
  seq += 1;
  const id = store.messages.insert({
    groupId,
    channel: 'local',
    chatId: groupId,
    externalId: `ext-${seq}`,
    senderId: 'u1',
    senderName: 'Ann',
    text,
    sentAt: new Date(Date.UTC(2026, 0, 1) + seq * 60_000).toISOString(),
    triggers: false,
    ...fields,
  });
  if (id === undefined) throw new Error('expected the message to be stored');
  return id;
}

/** What the host's indexer does within seconds: every waiting message into the index. */
function indexWaiting() {
  while (!store.memory.backfillStep(1000).done) {
    /* step */
  }
}

/** Stores a message and indexes it, as it is a few seconds after it came in. */
function say(groupId: string, text: string, fields: Partial<NewMessage> = {}): number {
  const id = sayWaiting(groupId, text, fields);
  indexWaiting();
  return id;
}

const ids = (groupId: string, text: string) =>
  store.memory.search(groupId, { text }).map((h) => `${h.kind}:${h.id}`);

/** Breaks the index behind the store's back, as a bug or a half-applied change would. */
function dropFromIndex(rowid: number) {
  store.db.prepare('DELETE FROM memory_fts WHERE rowid = ?').run(rowid);
}

describe('memory search', () => {
  it('finds a message of the group with its sender, time, origin and a snippet', () => {
    const id = say('family', 'The plumber is Mario, his number is 555 0199', {
      senderId: 'sam',
      senderName: 'Sam',
      sentAt: '2026-01-01T10:00:00.000Z',
    });
    say('family', 'unrelated chatter');
    const [hit, ...rest] = store.memory.search('family', { text: "plumber's number" });
    expect(rest).toEqual([]);
    expect(hit).toMatchObject({
      kind: 'message',
      id,
      senderId: 'sam',
      senderName: 'Sam',
      fromOwner: false,
      channel: 'local',
      at: '2026-01-01T10:00:00.000Z',
    });
    expect(hit?.snippet).toContain('plumber');
  });

  it('keeps whether the words were the owner’s', () => {
    say('main', 'remember the boiler code 4411', { fromOwner: true });
    expect(store.memory.search('main', { text: 'boiler' })[0]).toMatchObject({ fromOwner: true });
  });

  it('never returns another group’s rows, and the match itself is limited to the group', () => {
    const secret = say('main', 'the vault code is 9931', { fromOwner: true });
    const family = say('family', 'the vault code is a rumour');
    expect(ids('family', 'vault code')).toEqual([`message:${family}`]);
    expect(ids('work', 'vault code')).toEqual([]);
    expect(ids('main', 'vault code')).toEqual([`message:${secret}`]);
    // The index alone, before any join to the messages table: only the group's own rowids match.
    const matched = store.db
      .prepare('SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?')
      .all(matchExpression('family', ['vault']));
    expect(matched).toEqual([{ rowid: family }]);
  });

  it('keeps every word of a row as a term of the row’s own group, so a match reads no other group’s postings', () => {
    const rows = [say('main', 'the vault code is 9931'), say('family', 'Vault, café x-ray')];
    store.memory.putNote({
      groupId: 'work',
      path: 'memory/v.md',
      text: 'vault of work',
      author: 'owner',
      taint: { corruption: false, secret: false },
    });
    store.db.exec('CREATE VIRTUAL TABLE temp.memory_vocab USING fts5vocab(main, memory_fts, instance)');
    const terms = store.db
      .prepare(
        `SELECT v.term, coalesce(m.group_id, n.group_id) AS group_id FROM temp.memory_vocab v
         LEFT JOIN messages m ON m.id = v.doc LEFT JOIN memory_notes n ON n.id = -v.doc`,
      )
      .all() as { term: string; group_id: string }[];
    expect(new Set(terms.map((t) => t.group_id))).toEqual(new Set(['main', 'family', 'work']));
    for (const t of terms) expect(t.term.startsWith(groupTerm(t.group_id, ''))).toBe(true);
    expect(
      terms.filter((t) => t.group_id === 'family').map((t) => t.term.split('x').slice(1).join('x')),
    ).toEqual(expect.arrayContaining(['vault', 'cafe', 'x', 'ray', 'ann']));
    expect(rows).toHaveLength(2);
  });

  it('reads the index and then each hit by its id: no scan of the history', () => {
    say('family', 'anything');
    const plan = (sql: string, ...params: unknown[]) =>
      (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map(
        (p) => p.detail,
      );
    const expression = matchExpression('family', ['anything']);
    for (const sql of [
      'SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? AND rowid > 0 ORDER BY rowid DESC LIMIT ?',
      'SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? AND rowid < 0 ORDER BY rowid ASC LIMIT ?',
      `SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? AND rowid <= -${2 ** 40} ORDER BY rowid ASC LIMIT ?`,
    ]) {
      const match = plan(sql, expression, 10);
      expect(match).toHaveLength(1);
      expect(match[0]).toMatch(/^SCAN memory_fts VIRTUAL TABLE INDEX \d+:D?M/);
    }
    const rows = plan(
      `SELECT m.id FROM messages m WHERE m.id IN (SELECT value FROM json_each(@ids)) AND m.group_id = @group
         AND m.sent_at >= @since AND m.sent_at <= @until`,
      { ids: '[1]', group: 'family', since: '', until: 'z' },
    );
    // Each candidate is read by its id within the group's own rows, (group_id, id) in messages_by_group.
    expect(rows).toContain('SEARCH m USING INDEX messages_by_group (group_id=? AND id=?)');
    expect(rows.some((d) => /SCAN m\b/.test(d))).toBe(false);
    const waiting = plan(
      `SELECT m.id FROM messages m
       WHERE m.group_id = @group AND m.id >= (SELECT next_id FROM memory_backfill WHERE id = 1)
         AND m.sent_at >= @since AND m.sent_at <= @until
       ORDER BY m.id DESC LIMIT 1000`,
      { group: 'family', since: '', until: 'z' },
    );
    // The waiting messages of the group: the newest end of its (group_id, id) range, nothing older read.
    expect(waiting).toContain('SEARCH m USING INDEX messages_by_group (group_id=? AND id>?)');
    expect(waiting.some((d) => /SCAN m\b|TEMP B-TREE/.test(d))).toBe(false);
  });

  it('ranks by the group’s own word statistics: another group’s use of a word changes nothing', () => {
    say('family', 'boiler boiler repair');
    say('family', 'boiler');
    const before = store.memory.search('family', { text: 'boiler repair' }).map((h) => [h.id, h.score]);
    for (let i = 0; i < 30; i += 1) say('work', `repair ticket ${i}`);
    expect(store.memory.search('family', { text: 'boiler repair' }).map((h) => [h.id, h.score])).toEqual(
      before,
    );
  });

  it('filters by sender (id or name) and time range, and ranks the better match first', () => {
    say('family', 'pizza on friday', {
      senderId: 'ann',
      senderName: 'Ann',
      sentAt: '2026-01-02T10:00:00.000Z',
    });
    const bob = say('family', 'pizza pizza pizza, pizza again', {
      senderId: 'bob',
      senderName: 'Bob',
      sentAt: '2026-01-20T10:00:00.000Z',
    });
    expect(store.memory.search('family', { text: 'pizza', sender: 'bob' }).map((h) => h.id)).toEqual([bob]);
    expect(store.memory.search('family', { text: 'pizza', sender: 'BOB' }).map((h) => h.id)).toEqual([bob]);
    expect(
      store.memory
        .search('family', { text: 'pizza', until: '2026-01-10T00:00:00.000Z' })
        .map((h) => (h.kind === 'note' ? h.path : h.senderName)),
    ).toEqual(['Ann']);
    expect(store.memory.search('family', { text: 'pizza' })[0]?.id).toBe(bob);
  });

  it('treats the query as words: FTS5 operators and quotes are not syntax', () => {
    say('family', 'NEAR the "station" OR not');
    expect(ids('family', 'scope : "x" OR NEAR(')).toEqual([]);
    expect(store.memory.search('family', { text: '"station"' })).toHaveLength(1);
    expect(store.memory.search('family', { text: '*** ---' })).toEqual([]);
  });
});

describe('notes', () => {
  it('indexes a note with its author and the taint of the run that wrote it; deleting it unindexes it', () => {
    const id = store.memory.putNote({
      groupId: 'family',
      path: 'memory/2026-01-01-sam.md',
      text: 'Sam is vegetarian',
      author: 'agent',
      runId: 7,
      taint: { corruption: true, secret: false },
    });
    expect(store.memory.search('family', { text: 'vegetarian' })).toMatchObject([
      { kind: 'note', id, author: 'agent', runId: 7, taint: { corruption: true, secret: false } },
    ]);
    expect(ids('work', 'vegetarian')).toEqual([]);
    expect(store.memory.deleteNote(id)).toBe(true);
    expect(ids('family', 'vegetarian')).toEqual([]);
    expect(store.memory.check().ok).toBe(true);
  });

  it('finds a note when the group says its words more often than the candidates hold', () => {
    for (let i = 0; i < 320; i += 1) say('family', `the plumber came by, visit ${i}`);
    const id = store.memory.putNote({
      groupId: 'family',
      path: 'memory/plumber.md',
      text: 'the plumber is Joe, 0123 456',
      author: 'owner',
      taint: { corruption: false, secret: false },
    });
    const hits = store.memory.search('family', { text: 'plumber Joe', limit: 5 });
    expect(hits[0]).toMatchObject({ kind: 'note', id });
    expect(store.memory.search('family', { text: 'plumber', limit: 50 }).some((h) => h.kind === 'note')).toBe(
      true,
    );
  });

  it('an edited note is found by its new words only, and keeps the worse taint', () => {
    const note = { groupId: 'family', path: 'memory/a.md', author: 'agent' as const };
    const id = store.memory.putNote({
      ...note,
      text: 'old words',
      taint: { corruption: true, secret: false },
    });
    store.memory.putNote({ ...note, text: 'new words', taint: { corruption: false, secret: false } });
    expect(ids('family', 'old')).toEqual([]);
    expect(store.memory.search('family', { text: 'new' })).toMatchObject([
      { id, taint: { corruption: true } },
    ]);
  });
});

describe('messages waiting for the indexer', () => {
  const indexed = () =>
    (
      store.db.prepare('SELECT rowid FROM memory_fts WHERE rowid > 0 ORDER BY rowid').all() as {
        rowid: number;
      }[]
    ).map((r) => r.rowid);

  it('are found the moment they are stored, and indexing them changes no answer', () => {
    say('family', 'the café opens at nine', { senderId: 'ann', senderName: 'Ann' });
    const waiting = [
      sayWaiting('family', 'Meet at the Café Nero, nine sharp', { senderId: 'bob', senderName: 'Bob' }),
      sayWaiting('family', 'cafe closed on Sunday', { senderId: 'ann', senderName: 'Ann' }),
      sayWaiting('work', 'cafe budget for the team', { senderId: 'bob', senderName: 'Bob' }),
      sayWaiting('family', 'nine o’clock it is', { senderId: 'bob', senderName: 'Bob' }),
    ];
    store.memory.putNote({
      groupId: 'family',
      path: 'memory/cafe.md',
      text: 'Ann likes the café by the station',
      author: 'owner',
      taint: { corruption: false, secret: false },
    });
    expect(indexed()).not.toContain(waiting[0]);
    const questions: [string, Parameters<Store['memory']['search']>[1]][] = [
      ['family', { text: 'cafe' }],
      ['family', { text: 'café nine' }],
      ['family', { text: 'cafe', sender: 'bob' }],
      ['family', { text: 'nine', until: new Date(Date.UTC(2026, 0, 1) + (seq - 1) * 60_000).toISOString() }],
      ['family', { text: 'bob' }], // the sender's name is indexed with the words
      ['work', { text: 'cafe' }],
      ['main', { text: 'cafe' }],
    ];
    const answers = () => questions.map(([group, q]) => store.memory.search(group, q));
    const before = answers();
    expect(before[0]?.map((h) => `${h.kind}:${h.id}`)).toHaveLength(4);
    expect(before[5]?.map((h) => h.id)).toEqual([waiting[2]]);
    expect(before[6]).toEqual([]);
    indexWaiting();
    expect(indexed()).toEqual(expect.arrayContaining(waiting));
    expect(answers()).toEqual(before);
    expect(store.memory.check()).toMatchObject({ ok: true, missing: 0, extra: 0 });
  });

  it('a waiting message edited or deleted is read as it is now, and indexed so', () => {
    const edited = sayWaiting('family', 'the code is 1234');
    const gone = sayWaiting('family', 'the code is 9999');
    store.db.prepare("UPDATE messages SET text = 'the pin is 4321' WHERE id = ?").run(edited);
    store.memory.forgetMessage('family', gone);
    expect(ids('family', 'code')).toEqual([]);
    expect(ids('family', 'pin')).toEqual([`message:${edited}`]);
    indexWaiting();
    expect(ids('family', 'code')).toEqual([]);
    expect(ids('family', 'pin')).toEqual([`message:${edited}`]);
    expect(store.memory.check()).toMatchObject({ ok: true, missing: 0, extra: 0 });
  });

  it('a step that fails midway loses nothing: the messages wait on, and the next step takes them', () => {
    const id = sayWaiting('family', 'boiler service on Tuesday');
    const before = store.memory.backfillProgress();
    expect(() =>
      store.transaction(() => {
        store.memory.backfillStep(100);
        throw new Error('crash before the commit');
      }),
    ).toThrow('crash before the commit');
    expect(store.memory.backfillProgress()).toEqual(before);
    expect(indexed()).not.toContain(id);
    expect(ids('family', 'boiler')).toEqual([`message:${id}`]);
    expect(store.memory.backfillStep(100).done).toBe(true);
    expect(indexed()).toContain(id);
    expect(store.memory.check()).toMatchObject({ ok: true, missing: 0, extra: 0 });
  });

  it('the integrity check fails on a waiting message already in the index (the walker would double it)', () => {
    const id = sayWaiting('family', 'not yet');
    store.db
      .prepare('INSERT INTO memory_fts (rowid, terms) VALUES (?, ?)')
      .run(id, indexTerms('family', 'not yet'));
    expect(store.memory.check()).toMatchObject({ ok: false, missing: 0, extra: 1 });
  });
});

describe('the index’s lifecycle', () => {
  it('retention deleting a message deletes it from the index', () => {
    const id = say('family', 'ephemeral words');
    clock = new Date('2026-03-01T00:00:00.000Z');
    const step = store.retention.pruneMessages(1, 0, 100);
    expect(step.removed).toBe(1);
    expect(ids('family', 'ephemeral')).toEqual([]);
    expect(store.db.prepare('SELECT count(*) AS n FROM memory_fts WHERE rowid = ?').get(id)).toEqual({
      n: 0,
    });
    expect(store.memory.check().ok).toBe(true);
  });

  it('removing a group removes its messages and notes from the index', () => {
    say('work', 'quarterly numbers');
    store.memory.putNote({
      groupId: 'work',
      path: 'memory/q.md',
      text: 'quarterly target',
      author: 'owner',
      taint: { corruption: false, secret: false },
    });
    store.groups.remove('work');
    const left = store.db.prepare('SELECT count(*) AS n FROM memory_fts').get() as { n: number };
    expect(left.n).toBe(0);
    expect(store.memory.check()).toMatchObject({ ok: true, missing: 0, extra: 0 });
  });

  it('the integrity check fails on a deliberately broken index: a missing row and a stray row', () => {
    const id = say('family', 'indexed words');
    expect(store.memory.check().ok).toBe(true);
    dropFromIndex(id);
    expect(store.memory.check()).toMatchObject({ ok: false, missing: 1, extra: 0 });
    store.db.prepare("INSERT INTO memory_fts (rowid, terms) VALUES (999999, 'ghost')").run();
    expect(store.memory.check()).toMatchObject({ ok: false, missing: 1, extra: 1 });
  });

  it('backfills messages stored before the index, resumably, and search is whole afterwards', () => {
    const old = [say('family', 'old alpha'), say('family', 'old beta'), say('work', 'old alpha')];
    // As the upgrade finds them: stored, not indexed, the backfill starting at the beginning.
    for (const id of old) dropFromIndex(id);
    store.db.prepare('UPDATE memory_backfill SET next_id = 0').run();
    const fresh = sayWaiting('family', 'new alpha');
    expect(store.memory.check().ok).toBe(true); // waiting, not missing
    // Usable meanwhile: the waiting messages are read directly.
    expect(ids('family', 'alpha').sort()).toEqual([`message:${old[0]}`, `message:${fresh}`].sort());
    const first = store.memory.backfillStep(1);
    expect(first.done).toBe(false);
    // A crash between steps: the next connection resumes where the last one stopped.
    store.close();
    store = openStore({ file });
    expect(store.memory.backfillProgress().nextId).toBe(first.nextId);
    while (!store.memory.backfillStep(1).done) {
      /* step */
    }
    expect(ids('family', 'alpha').sort()).toEqual([`message:${old[0]}`, `message:${fresh}`].sort());
    expect(ids('work', 'alpha')).toEqual([`message:${old[2]}`]);
    expect(store.memory.check()).toMatchObject({ ok: true, missing: 0, extra: 0 });
  });

  it('a reindex rebuilds from the store of record, even from a broken index, and survives a crash midway', () => {
    for (let i = 0; i < 20; i += 1) say(i % 2 ? 'family' : 'work', `word${i % 5} shared`);
    store.memory.putNote({
      groupId: 'family',
      path: 'memory/n.md',
      text: 'shared note',
      author: 'owner',
      taint: { corruption: false, secret: false },
    });
    const before = { family: ids('family', 'shared'), work: ids('work', 'shared') };
    dropFromIndex(before.family.map((h) => Number(h.split(':')[1]))[0] ?? 0);
    expect(store.memory.check().ok).toBe(false);
    store.memory.resetIndex();
    store.memory.backfillStep(5);
    // Crash mid-reindex: the half-built index is searchable for what it has, and the next start goes on.
    store.close();
    store = openStore({ file });
    expect(store.memory.check().ok).toBe(true);
    while (!store.memory.backfillStep(5).done) {
      /* step */
    }
    expect({ family: ids('family', 'shared'), work: ids('work', 'shared') }).toEqual(before);
    expect(store.memory.check()).toMatchObject({ ok: true, missing: 0, extra: 0 });
  });
});

describe('the text of documents the group read', () => {
  const media = (file: string) => ({
    media: {
      kind: 'document',
      fileName: 'lease.pdf',
      path: file,
      senderId: 'u1',
      status: 'stored' as const,
    },
  });
  const documentRows = () =>
    (
      store.db.prepare('SELECT count(*) AS n FROM memory_fts WHERE rowid <= ?').get(-(2 ** 40)) as {
        n: number;
      }
    ).n;

  it('is found with the sender and time of the message that carried it, and only in its group', () => {
    const msg = say('family', 'here is the lease', {
      ...media('media/2026-01-01/7-lease.pdf'),
      senderName: 'Landlord',
      senderId: 'll',
    });
    expect(store.memory.messageCarrying('family', 'media/2026-01-01/7-lease.pdf')).toBe(msg);
    expect(store.memory.messageCarrying('work', 'media/2026-01-01/7-lease.pdf')).toBeUndefined();
    const id = store.memory.putDocumentText({
      groupId: 'family',
      messageId: msg,
      text: 'The deposit is 1200 euros, returned within 30 days.',
      runId: 5,
      secret: false,
    });
    expect(id).toBeDefined();
    // A message of another group is not this group's to attach text to.
    expect(
      store.memory.putDocumentText({ groupId: 'work', messageId: msg, text: 'x', secret: false }),
    ).toBeUndefined();
    const [hit] = store.memory.search('family', { text: 'deposit euros' });
    expect(hit).toMatchObject({
      kind: 'document',
      messageId: msg,
      fileName: 'lease.pdf',
      senderName: 'Landlord',
      senderId: 'll',
      runId: 5,
      taint: { corruption: true, secret: false },
    });
    expect(store.memory.search('family', { text: 'deposit', sender: 'Landlord' })).toHaveLength(1);
    expect(store.memory.search('family', { text: 'deposit', sender: 'Ann' })).toHaveLength(0);
    expect(store.memory.search('work', { text: 'deposit' })).toEqual([]);
    expect(store.memory.check()).toMatchObject({ ok: true, missing: 0, extra: 0 });
  });

  it('a second read replaces the text and keeps the worse taint', () => {
    const msg = say('family', 'the lease', media('media/a.pdf'));
    store.memory.putDocumentText({ groupId: 'family', messageId: msg, text: 'old clause', secret: true });
    store.memory.putDocumentText({ groupId: 'family', messageId: msg, text: 'new clause', secret: false });
    expect(ids('family', 'old')).toEqual([]);
    expect(store.memory.search('family', { text: 'clause' })).toEqual([
      expect.objectContaining({ kind: 'document', taint: { corruption: true, secret: true } }),
    ]);
    expect(documentRows()).toBe(1);
  });

  it('leaves with its message: forget, retention and the group’s removal', () => {
    const forgotten = say('family', 'first', media('media/1.pdf'));
    const retained = say('work', 'second', media('media/2.pdf'));
    const third = say('main', 'third', media('media/3.pdf'));
    store.memory.putDocumentText({
      groupId: 'family',
      messageId: forgotten,
      text: 'alpha clause',
      secret: false,
    });
    store.memory.putDocumentText({
      groupId: 'work',
      messageId: retained,
      text: 'beta clause',
      secret: false,
    });
    store.memory.putDocumentText({ groupId: 'main', messageId: third, text: 'gamma clause', secret: false });
    expect(documentRows()).toBe(3);
    expect(store.memory.forgetMessage('family', forgotten)).toBe(true);
    expect(ids('family', 'clause')).toEqual([]);
    store.groups.remove('work');
    expect(documentRows()).toBe(1);
    clock = new Date('2026-03-01T00:00:00.000Z');
    store.retention.pruneMessages(1, 0, 100);
    expect(ids('main', 'gamma')).toEqual([]);
    expect(documentRows()).toBe(0);
    expect(store.memory.check()).toMatchObject({ ok: true, missing: 0, extra: 0 });
  });

  it('the check finds a document missing from the index, and a reindex puts it back', () => {
    const msg = say('family', 'the lease', media('media/a.pdf'));
    const id = store.memory.putDocumentText({
      groupId: 'family',
      messageId: msg,
      text: 'deposit clause',
      secret: false,
    });
    expect(id).toBeDefined();
    dropFromIndex(-(2 ** 40 + (id ?? 0)));
    expect(store.memory.check()).toMatchObject({ ok: false, missing: 1, extra: 0 });
    store.memory.resetIndex();
    indexWaiting();
    expect(store.memory.check()).toMatchObject({ ok: true, missing: 0, extra: 0 });
    expect(store.memory.search('family', { text: 'deposit' }).map((h) => h.kind)).toEqual(['document']);
  });
});
