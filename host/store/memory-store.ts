import { groupTerm, queryTerms, words } from './memory-terms.ts';
import type { Statement } from 'better-sqlite3';
import type { Db } from './open-database.ts';

/**
 * The memory index (migrations 016 to 021): full-text search over one group's messages, notes and the
 * text of documents it read, each word a term of its group (memory-terms.ts). Notes, documents and the deletion or edit of an indexed message reach the index
 * by trigger; a new message waits until the
 * walker (`backfillStep`) takes it in with others in one transaction, and search reads a group's waiting
 * messages directly meanwhile. This module reads the index, writes notes, walks the waiting messages in,
 * checks the index and rebuilds it from the store of record (messages, memory_notes).
 */

export interface MemoryQuery {
  /** Words to look for; anything but letters and digits separates them. */
  text: string;
  /** ISO times, inclusive: only what was said (or noted) in this range. */
  since?: string;
  until?: string;
  /** A sender id or display name (case-insensitive); messages only. */
  sender?: string;
  /**
   * Only messages up to this id: a run passes the group's cursor at its start, so its own input (the
   * message that asked, and whatever came after) is the conversation it is in, never a recalled hit.
   */
  throughId?: number;
  limit?: number;
}

interface HitBase {
  /** The whole text as stored (a message's fenced words stay fenced). */
  text: string;
  /** Up to ~240 characters around the first matched word. */
  snippet: string;
  /** bm25: lower is better. */
  score: number;
  at: string;
}

export interface MessageHit extends HitBase {
  kind: 'message';
  id: number;
  senderId: string;
  senderName: string;
  /** The owner's own words; anything else is a stranger's, however it came in. */
  fromOwner: boolean;
  channel: string;
}

export interface NoteHit extends HitBase {
  kind: 'note';
  id: number;
  path: string;
  author: 'owner' | 'agent';
  runId: number | null;
  /** The taint of the run that wrote the note: recalling it taints the reader alike. */
  taint: { corruption: boolean; secret: boolean };
}

/** The text of a document a message carried, as a run that read it reported it (migration 018). */
export interface DocumentHit extends HitBase {
  kind: 'document';
  id: number;
  messageId: number;
  /** The sender's name for the file, when they gave one. */
  fileName: string;
  /** Who sent the message that carried it. */
  senderId: string;
  senderName: string;
  channel: string;
  runId: number | null;
  /** A document is nobody's own words: always corrupting; secret when the run that reported it was. */
  taint: { corruption: true; secret: boolean };
}

export type MemoryHit = MessageHit | NoteHit | DocumentHit;

export interface NewDocumentText {
  groupId: string;
  messageId: number;
  text: string;
  runId?: number;
  secret: boolean;
}

export interface MemoryNote {
  id: number;
  groupId: string;
  path: string;
  text: string;
  writtenAt: string;
  author: 'owner' | 'agent';
  runId: number | null;
  taint: { corruption: boolean; secret: boolean };
}

export interface NewNote {
  groupId: string;
  path: string;
  text: string;
  author: 'owner' | 'agent';
  runId?: number;
  taint: { corruption: boolean; secret: boolean };
}

export interface BackfillProgress {
  /** The newest message's id. */
  through: number;
  /** The first message not indexed yet; done when past `through`. */
  nextId: number;
  done: boolean;
}

export interface IndexCheck {
  ok: boolean;
  /** Rows of the store of record the index does not find, and index rows no record backs. */
  missing: number;
  extra: number;
  problems: string[];
}

const MAX_HITS = 50;
/** Matches of one group ranked per search, newest first: a word the group used more often than this is
 * ranked among its newest uses only. */
const MAX_CANDIDATES = 300;
/** Waiting messages of one group read by a search, newest first: the host's indexer keeps them to a few
 * seconds' worth; only during a backfill of a long history are there more, and the older ones are found once
 * indexed, as before. */
const MAX_WAITING = 1000;
const SNIPPET_CHARS = 240;
/** A document's rowid in memory_fts is −(DOCUMENT_ROWIDS + id), below every note's −id (migration 018). */
const DOCUMENT_ROWIDS = 2 ** 40;
/** The text of one document kept for search, at most (read_attachment returns no more than 60,000). */
export const MAX_DOCUMENT_CHARS = 60_000;

/** Every word as the group's own term: only the group's postings are read (a word holds no quote). */
export function matchExpression(groupId: string, terms: string[]): string {
  return terms.map((t) => `"${groupTerm(groupId, t)}"`).join(' AND ');
}

export function snippetOf(text: string, terms: string[]): string {
  const lower = text.toLowerCase();
  let at = -1;
  for (const t of terms) {
    const i = lower.indexOf(t);
    if (i >= 0 && (at < 0 || i < at)) at = i;
  }
  if (text.length <= SNIPPET_CHARS) return text;
  const start = Math.max(0, (at < 0 ? 0 : at) - SNIPPET_CHARS / 3);
  const body = text.slice(start, start + SNIPPET_CHARS);
  return `${start > 0 ? '…' : ''}${body}${start + SNIPPET_CHARS < text.length ? '…' : ''}`;
}

/**
 * Okapi BM25 (k1 1.2, b 0.75, as FTS5's) over the group's own matches, negated so lower is better as FTS5
 * reports it: the word statistics are the group's, never other groups'.
 */
export function bm25(bodies: string[], terms: string[]): number[] {
  const n = bodies.length;
  if (n === 0) return [];
  // One pass over each body: its length and how often it holds each term.
  const column = new Map(terms.map((t, i) => [t, i]));
  const docs = bodies.map((body) => {
    const tf = terms.map(() => 0);
    const all = words(body);
    for (const w of all) {
      const i = column.get(w);
      if (i !== undefined) tf[i] = (tf[i] ?? 0) + 1;
    }
    return { length: all.length, tf };
  });
  const avg = docs.reduce((sum, d) => sum + d.length, 0) / n || 1;
  const df = terms.map((_, i) => docs.filter((d) => (d.tf[i] ?? 0) > 0).length);
  return docs.map((d) => {
    let score = 0;
    d.tf.forEach((tf, i) => {
      if (tf === 0) return;
      const idf = Math.log(1 + (n - (df[i] ?? 0) + 0.5) / ((df[i] ?? 0) + 0.5));
      score += (idf * tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * d.length) / avg));
    });
    return -score;
  });
}

interface MessageHitRow {
  id: number;
  sender_id: string;
  sender_name: string;
  from_owner: number;
  channel: string;
  text: string;
  sent_at: string;
  file_name: string;
}

interface NoteRow {
  id: number;
  group_id: string;
  path: string;
  text: string;
  written_at: string;
  author: 'owner' | 'agent';
  run_id: number | null;
  taint_corruption: number;
  taint_secret: number;
}

interface DocumentRow {
  id: number;
  message_id: number;
  text: string;
  run_id: number | null;
  taint_secret: number;
  sender_id: string;
  sender_name: string;
  channel: string;
  sent_at: string;
  file_name: string;
}

const noteTaint = (r: NoteRow) => ({ corruption: r.taint_corruption === 1, secret: r.taint_secret === 1 });

function toNote(r: NoteRow): MemoryNote {
  const { id, path, text, author } = r;
  return {
    id,
    groupId: r.group_id,
    path,
    text,
    writtenAt: r.written_at,
    author,
    runId: r.run_id,
    taint: noteTaint(r),
  };
}

const MESSAGE_BODY = `m.text || ' ' || m.sender_name || ' ' || coalesce(json_extract(m.media, '$.fileName'), '')`;

const MESSAGE_COLUMNS = `m.id, m.sender_id, m.sender_name, m.from_owner, m.channel, m.text, m.sent_at,
  coalesce(json_extract(m.media, '$.fileName'), '') AS file_name`;

const MESSAGE_FILTER = `AND m.sent_at >= @since AND m.sent_at <= @until AND m.id <= @through
       AND (@sender IS NULL OR m.sender_id = @sender OR lower(m.sender_name) = lower(@sender))`;

/**
 * The candidate documents, each read by its id and then its message by id. CROSS JOIN keeps that order: left
 * to choose, SQLite walked the group's every message (its (group_id, id) range up to `through`) to look
 * each up among the documents, ~4 ms a search on the month with no document at all.
 */
export const DOCUMENTS_BY_IDS = `SELECT d.id, d.message_id, d.text, d.run_id, d.taint_secret, m.sender_id,
       m.sender_name, m.channel, m.sent_at, coalesce(json_extract(m.media, '$.fileName'), '') AS file_name
     FROM memory_documents d CROSS JOIN messages m ON m.id = d.message_id AND m.group_id = d.group_id
     WHERE d.id IN (SELECT value FROM json_each(@ids)) AND d.group_id = @group ${MESSAGE_FILTER}`;

type Ranked = MemoryHit & { body: string };

/**
 * What every kind of hit has: the text, when it was said, and what the rank reads (`body`). The snippet is
 * cut once the hits are chosen, for the few returned, not for every candidate ranked.
 */
function found(text: string, at: string, body = text) {
  return { text, snippet: '', score: 0, at, body };
}

/** Who said it and where: a message's, and a document's message's. */
const saidBy = (r: { sender_id: string; sender_name: string; channel: string }) => ({
  senderId: r.sender_id,
  senderName: r.sender_name,
  channel: r.channel,
});

function messageHit(r: MessageHitRow): Ranked {
  return {
    kind: 'message',
    id: r.id,
    ...saidBy(r),
    fromOwner: r.from_owner === 1,
    // What the index holds for the row, for the rank (see MESSAGE_BODY).
    ...found(r.text, r.sent_at, `${r.text} ${r.sender_name} ${r.file_name}`),
  };
}

function noteHit(r: NoteRow): Ranked {
  return {
    kind: 'note',
    id: r.id,
    path: r.path,
    author: r.author,
    runId: r.run_id,
    taint: noteTaint(r),
    ...found(r.text, r.written_at),
  };
}

function documentHit(r: DocumentRow): Ranked {
  return {
    kind: 'document',
    id: r.id,
    messageId: r.message_id,
    fileName: r.file_name,
    ...saidBy(r),
    runId: r.run_id,
    taint: { corruption: true, secret: r.taint_secret === 1 },
    // When the document came in: its message's time, which the time filters apply to.
    ...found(r.text, r.sent_at),
  };
}

/** Whether a body holds every term, as the index would (the terms are `queryTerms`, cut alike). */
export function matches(body: string, terms: string[]): boolean {
  const have = new Set(words(body));
  return terms.every((t) => have.has(t));
}

function createMemorySearch(db: Db) {
  // The newest matches of the group, from the index alone: every term is the group's own, so only its
  // postings are read, and FTS5 walks rowids backwards natively. FTS5's bm25() is not used: its word frequencies
  // are counted over every group's rows (a read of all their postings on each query, and a ranking that
  // would move with what other groups say); the rank is computed here over the group's own matches.
  const newestMatches = (rowids: string, order: 'ASC' | 'DESC') =>
    db.prepare<[string, number], { rowid: number }>(
      `SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? AND ${rowids} ORDER BY rowid ${order} LIMIT ?`,
    );
  const matchRowids = newestMatches('rowid > 0', 'DESC');
  // Notes apart (rowid = −note id, the newest the most negative): in one walk they would come after every
  // message, and a word the group says often would push the notes it was asked to keep out of the candidates.
  const matchNoteRowids = newestMatches(`rowid < 0 AND rowid > -${DOCUMENT_ROWIDS}`, 'ASC');
  // Documents apart too, for the same reason (rowid = −(2^40 + document id)).
  const matchDocumentRowids = newestMatches(`rowid <= -${DOCUMENT_ROWIDS}`, 'ASC');
  // Then each candidate by its id, the group checked again on every row.
  const messagesByIds = db.prepare<Record<string, unknown>, MessageHitRow>(
    `SELECT ${MESSAGE_COLUMNS} FROM messages m WHERE m.id IN (SELECT value FROM json_each(@ids)) AND m.group_id = @group ${MESSAGE_FILTER}`,
  );
  // The group's messages the walker has not taken in yet, newest first, by (group_id, id) in
  // messages_by_group: each is matched here word by word as the index would (see `matches`).
  const waitingMessages = db.prepare<Record<string, unknown>, MessageHitRow>(
    `SELECT ${MESSAGE_COLUMNS} FROM messages m
     WHERE m.group_id = @group AND m.id >= (SELECT next_id FROM memory_backfill WHERE id = 1) ${MESSAGE_FILTER}
     ORDER BY m.id DESC LIMIT ${MAX_WAITING}`,
  );
  const notesByIds = db.prepare<Record<string, unknown>, NoteRow>(
    `SELECT n.* FROM memory_notes n WHERE n.id IN (SELECT value FROM json_each(@ids)) AND n.group_id = @group
       AND n.written_at >= @since AND n.written_at <= @until`,
  );

  // A document is found by its message's sender and time, and leaves with its message.
  const documentsByIds = db.prepare<Record<string, unknown>, DocumentRow>(DOCUMENTS_BY_IDS);

  return (groupId: string, q: MemoryQuery): MemoryHit[] => {
    const terms = queryTerms(q.text);
    if (terms.length === 0) return [];
    const limit = Math.min(Math.max(1, q.limit ?? 10), MAX_HITS);
    const match = matchExpression(groupId, terms);
    const rowids = [
      ...matchRowids.all(match, MAX_CANDIDATES),
      ...matchNoteRowids.all(match, MAX_CANDIDATES),
    ].map((r) => r.rowid);
    const documentIds = matchDocumentRowids.all(match, MAX_CANDIDATES).map((r) => -r.rowid - DOCUMENT_ROWIDS);
    const range = { group: groupId, since: q.since ?? '', until: q.until ?? '\uffff' };
    const messageIds = rowids.filter((r) => r > 0);
    const noteIds = rowids.filter((r) => r < 0).map((r) => -r);
    const filter = { ...range, sender: q.sender ?? null, through: q.throughId ?? Number.MAX_SAFE_INTEGER };
    // No candidate of a kind, no read of it.
    const byIds = <R>(read: Statement<Record<string, unknown>, R>, ids: number[], params: object): R[] =>
      ids.length === 0 ? [] : read.all({ ...params, ids: JSON.stringify(ids) });
    const all: Ranked[] = [
      ...waitingMessages
        .all(filter)
        .map(messageHit)
        .filter((h) => matches(h.body, terms)),
      ...byIds(messagesByIds, messageIds, filter).map(messageHit),
      ...byIds(documentsByIds, documentIds, filter).map(documentHit),
      ...(q.sender === undefined ? byIds(notesByIds, noteIds, range).map(noteHit) : []),
    ];
    const scores = bm25(
      all.map((h) => h.body),
      terms,
    );
    const hits: MemoryHit[] = all.map(({ body: _body, ...h }, i) => ({ ...h, score: scores[i] ?? 0 }));
    // Best first; among equals, the newer.
    return hits
      .sort((x, y) => x.score - y.score || (x.at < y.at ? 1 : -1))
      .slice(0, limit)
      .map((h) => ({ ...h, snippet: snippetOf(h.text, terms) }));
  };
}

export function createMemoryStore(db: Db, now: () => Date = () => new Date()) {
  const insertNote = db.prepare(
    `INSERT INTO memory_notes (group_id, path, text, written_at, author, run_id, taint_corruption, taint_secret)
     VALUES (@groupId, @path, @text, @writtenAt, @author, @runId, @corruption, @secret)
     ON CONFLICT (group_id, path) DO UPDATE SET text = excluded.text, written_at = excluded.written_at,
       author = excluded.author, run_id = excluded.run_id,
       taint_corruption = MAX(taint_corruption, excluded.taint_corruption),
       taint_secret = MAX(taint_secret, excluded.taint_secret)
     RETURNING id`,
  );
  const notesOf = db.prepare<[string], NoteRow>('SELECT * FROM memory_notes WHERE group_id = ? ORDER BY id');
  const noteById = db.prepare<[number], NoteRow>('SELECT * FROM memory_notes WHERE id = ?');
  const deleteNote = db.prepare('DELETE FROM memory_notes WHERE id = ?');
  const deleteMessage = db.prepare('DELETE FROM messages WHERE id = ? AND group_id = ?');
  // The message must be the group's own: a run reports a path, never which group the text belongs to.
  const insertDocument = db.prepare(
    `INSERT INTO memory_documents (group_id, message_id, text, read_at, run_id, taint_secret)
     SELECT @groupId, id, @text, @readAt, @runId, @secret FROM messages WHERE id = @messageId AND group_id = @groupId
     ON CONFLICT (message_id) DO UPDATE SET text = excluded.text, read_at = excluded.read_at,
       run_id = excluded.run_id, taint_secret = MAX(taint_secret, excluded.taint_secret)
     RETURNING id`,
  );
  // One seek in messages_by_media_path (migration 018).
  const messageByMediaPath = db.prepare<[string, string], { id: number }>(
    `SELECT id FROM messages WHERE group_id = ? AND media IS NOT NULL AND json_extract(media, '$.path') = ?
     ORDER BY id DESC LIMIT 1`,
  );
  const backfillRow = db.prepare<[], { through: number; next_id: number }>(
    'SELECT (SELECT coalesce(max(id), 0) FROM messages) AS through, next_id FROM memory_backfill WHERE id = 1',
  );
  // One statement for the batch, the terms cut by memory_terms() as the triggers cut them: no row of it
  // crosses into JavaScript and back.
  const indexBatch = db.prepare<[number, number]>(
    `INSERT INTO memory_fts (rowid, terms)
     SELECT m.id, memory_terms(m.group_id, ${MESSAGE_BODY}) FROM messages m WHERE m.id >= ? ORDER BY m.id LIMIT ?`,
  );
  const batchEnd = db.prepare<[number, number], { last: number | null }>(
    'SELECT max(id) AS last FROM (SELECT id FROM messages WHERE id >= ? ORDER BY id LIMIT ?)',
  );
  const setBackfill = db.prepare('UPDATE memory_backfill SET next_id = ? WHERE id = 1');
  const resetBackfill = db.prepare('UPDATE memory_backfill SET next_id = 0 WHERE id = 1');
  // A message the walker has not reached yet (at or past next_id) is waiting, not missing.
  const missingRows = db.prepare<[], { n: number }>(
    `SELECT (SELECT count(*) FROM messages m
             WHERE m.id < (SELECT next_id FROM memory_backfill WHERE id = 1)
               AND NOT EXISTS (SELECT 1 FROM memory_fts f WHERE f.rowid = m.id))
          + (SELECT count(*) FROM memory_notes n WHERE NOT EXISTS (SELECT 1 FROM memory_fts f WHERE f.rowid = -n.id))
          + (SELECT count(*) FROM memory_documents d
             WHERE NOT EXISTS (SELECT 1 FROM memory_fts f WHERE f.rowid = -(${DOCUMENT_ROWIDS} + d.id)))
       AS n`,
  );
  const extraRows = db.prepare<[], { n: number }>(
    `SELECT count(*) AS n FROM memory_fts f
     WHERE (f.rowid > 0 AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = f.rowid))
        -- A waiting message already indexed would be indexed twice when the walker reaches it.
        OR f.rowid >= (SELECT next_id FROM memory_backfill WHERE id = 1)
        OR (f.rowid < 0 AND f.rowid > -${DOCUMENT_ROWIDS}
            AND NOT EXISTS (SELECT 1 FROM memory_notes n WHERE n.id = -f.rowid))
        OR (f.rowid <= -${DOCUMENT_ROWIDS}
            AND NOT EXISTS (SELECT 1 FROM memory_documents d WHERE d.id = -f.rowid - ${DOCUMENT_ROWIDS}))`,
  );

  const backfillProgress = (): BackfillProgress => {
    const r = backfillRow.get() ?? { through: 0, next_id: 1 };
    return { through: r.through, nextId: r.next_id, done: r.next_id > r.through };
  };

  return {
    search: createMemorySearch(db),

    /** Stores (or replaces, by path) a note; the trigger indexes it. A replaced note keeps the worse taint. */
    putNote(n: NewNote): number {
      const row = insertNote.get({
        groupId: n.groupId,
        path: n.path,
        text: n.text,
        writtenAt: now().toISOString(),
        author: n.author,
        runId: n.runId ?? null,
        corruption: n.taint.corruption ? 1 : 0,
        secret: n.taint.secret ? 1 : 0,
      }) as { id: number };
      return row.id;
    },
    notes(groupId: string): MemoryNote[] {
      return notesOf.all(groupId).map(toNote);
    },
    note(id: number): MemoryNote | undefined {
      const r = noteById.get(id);
      return r ? toNote(r) : undefined;
    },
    deleteNote(id: number): boolean {
      return deleteNote.run(id).changes > 0;
    },
    /**
     * Keeps the text a run read from a document the group's message carried (replacing an earlier read of
     * it); the trigger indexes it. Undefined when no message of the group carried that file.
     */
    putDocumentText(d: NewDocumentText): number | undefined {
      const row = insertDocument.get({
        groupId: d.groupId,
        messageId: d.messageId,
        text: d.text.slice(0, MAX_DOCUMENT_CHARS),
        readAt: now().toISOString(),
        runId: d.runId ?? null,
        secret: d.secret ? 1 : 0,
      }) as { id: number } | undefined;
      return row?.id;
    },
    /** The message of the group that carried the file stored at `path` (relative to the group folder). */
    messageCarrying(groupId: string, path: string): number | undefined {
      return messageByMediaPath.get(groupId, path)?.id;
    },
    /** The owner forgets a message: it leaves the history, and by trigger the index. */
    forgetMessage(groupId: string, id: number): boolean {
      return deleteMessage.run(id, groupId).changes > 0;
    },

    backfillProgress,
    /**
     * Indexes up to `limit` waiting messages (new ones, or history stored before the index existed or
     * before a reindex) in one transaction, and remembers where it stopped: a crash or stop resumes there.
     * One transaction for the batch is the point: FTS5 writes a segment per commit. Returns the progress
     * after the step.
     */
    backfillStep(limit = 500): BackfillProgress {
      return db.transaction(() => {
        const p = backfillProgress();
        if (p.done) return p;
        // Nothing at or past next_id is in the index (migration 017's triggers), so no row is doubled.
        indexBatch.run(p.nextId, limit);
        const next = Math.max(p.nextId, (batchEnd.get(p.nextId, limit)?.last ?? p.through) + 1);
        setBackfill.run(next);
        return { through: p.through, nextId: next, done: next > p.through };
      })();
    },

    /**
     * Compares the index with the store of record: every note and every message the backfill has reached
     * (or that came after it) must be indexed, and nothing else. FTS5's own integrity check cannot see a
     * missing row of a contentless table, so the rowids are compared here, one lookup per row.
     */
    check(): IndexCheck {
      const problems: string[] = [];
      try {
        // FTS5's own check is an INSERT command: a read-only connection (doctor) relies on the counts below.
        if (!db.readonly)
          db.prepare("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 0)").run();
      } catch (err) {
        problems.push(`the full-text index is damaged: ${(err as Error).message}`);
      }
      const missing = missingRows.get()?.n ?? 0;
      const extra = extraRows.get()?.n ?? 0;
      if (missing > 0) problems.push(`${missing} stored messages or notes are not in the index`);
      if (extra > 0) problems.push(`${extra} index rows belong to nothing stored`);
      return { ok: problems.length === 0, missing, extra, problems };
    },

    /**
     * Empties the index and starts the backfill over every stored message; notes and documents' text are
     * indexed at once.
     * One transaction: a crash before it commits leaves the old index whole, after it the backfill
     * resumes where it stopped. Nothing is read from the index, so nothing in it can be lost.
     */
    resetIndex(): void {
      db.transaction(() => {
        db.prepare("INSERT INTO memory_fts (memory_fts) VALUES ('delete-all')").run();
        db.prepare(
          'INSERT INTO memory_fts (rowid, terms) SELECT -id, memory_terms(group_id, text) FROM memory_notes',
        ).run();
        db.prepare(
          `INSERT INTO memory_fts (rowid, terms)
           SELECT -(${DOCUMENT_ROWIDS} + id), memory_terms(group_id, text) FROM memory_documents`,
        ).run();
        resetBackfill.run();
      })();
    },
  };
}

export type MemoryStore = ReturnType<typeof createMemoryStore>;
