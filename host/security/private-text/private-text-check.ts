import type { RunIdentity } from '../decisions.ts';
import { canonical } from '../secrets/canonical-text.ts';
import { createFolderSource, type FolderRefresh } from './folder-source.ts';
import { fileViews, textViews, type PayloadViews } from './payload-views.ts';
import {
  createPrivateIndex,
  type PrivateIndex,
  type PrivateOverlap,
  type PrivateScope,
} from './private-index.ts';

/**
 * Whether an outgoing payload gives away private text, by content: the group's folder, what `secret_data`
 * services returned in this run, and for the admin group its project, matched on the payload's readings
 * (payload-views.ts) through winnowed fingerprints (fingerprints.ts). A long verbatim overlap is a match;
 * so is one the run spreads over several payloads: the stretches of each private document that left in
 * pieces are kept per run, and their union counts as one overlap, and a base64 run a payload ends with
 * is read again joined to the next payload, so a gzip blob cut in pieces inflates whole. The rule that acts on a match is
 * the policies' (policies/private-text-rule.ts); this module only finds it.
 */

/** Where a payload goes: the run's own chat, or anywhere else (a URL, another chat, a service, a push). */
export type PrivateSink = 'own-chat' | 'elsewhere';

/** Canonical characters a payload must share verbatim with one private stretch to be a match. */
export const MIN_OVERLAP = 20;
/**
 * Pieces of a document that left in different payloads join when at most this many canonical characters
 * lie between them: base64 cut at any place loses a byte or two at each cut when each piece is decoded.
 */
const MAX_PIECE_GAP = 4;
/** A stretch of fewer distinct characters (`0000…`, `abababab…`) gives nothing away. */
const MIN_DISTINCT = 8;
/**
 * The end of a run's earlier payloads kept to read again before the next one, per sink: only a trailing
 * run of base64 characters (at most this long), where a blob cut across calls continues; every other
 * split is found by the pieces, so the common payload is read once.
 */
const TAIL_CHARS = 4096;
const TRAILING_BASE64 = /[A-Za-z0-9+/=_-]+$/;
/** What a run's `secret_data` answers may add to its index; more is left out (and said so). */
const MAX_SECRET_ANSWER_CHARS = 4 * 1024 * 1024;
const EXCERPT_CHARS = 300;

export interface PrivateTextMatch {
  /** Where the private text is (`notes/diary.md in the group folder`, `what bank returned in this run`). */
  from: string;
  /** Its words as written there, cut to 300 characters. */
  excerpt: string;
  /** How the payload spelled it (`plain`, `base64`, `file, inflated`, …) and whether it came in pieces. */
  form: string;
  /** Canonical characters of the longest stretch. */
  chars: number;
}

export interface PrivateTextVerdict {
  match?: PrivateTextMatch;
  /** Part of the payload could not be read within its budget (and so was not checked). */
  unread?: string;
}

export interface PrivateTextPayload {
  text: string;
  /** A file sent with a message: opened (inflated, unpacked) within a budget. */
  file?: Buffer;
}

export interface PrivateTextCheckDeps {
  /** The group's folder on the host. */
  groupFolder(groupId: string): string;
  /** The project the admin group sees (its files are private from every chat but the admin chat). */
  adminProject?: string;
  /** Folders of the admin project that hold no person's words and would cost the index (dependencies). */
  adminProjectSkip?(relPath: string): boolean;
  /** Told when a refresh left files out of an index (past a budget), for the audit. */
  onLeftOut?(identity: RunIdentity, what: string, leftOut: readonly string[]): void;
}

interface RunState {
  secret: PrivateIndex;
  secretChars: number;
  answers: number;
  /** Stretches of each private document that left in pieces, per sink: document key → [start, end). */
  pieces: Map<PrivateSink, Map<string, [number, number][]>>;
  tail: Map<PrivateSink, string>;
  ready?: Promise<void>;
}

/** Who a sink may not be shown: the group's folder is its own chat's to read, the owner's text is not. */
function scopesFor(identity: RunIdentity, sink: PrivateSink): ReadonlySet<PrivateScope> {
  if (sink === 'elsewhere') return new Set<PrivateScope>(['group', 'owner']);
  return identity.group.isAdmin ? new Set() : new Set<PrivateScope>(['owner']);
}

/**
 * Whether a stretch says something a person wrote: enough distinct characters (not `0000…`), and not a
 * hash (commit ids and checksums travel between copies of a repository by design).
 */
function wordsOf(canonicalStretch: string): boolean {
  if (new Set(canonicalStretch).size < MIN_DISTINCT) return false;
  // A hash mixes digits and the letters a-f; an account or phone number is digits alone, and private.
  let digits = 0;
  let hexLetters = 0;
  for (let i = 0; i < canonicalStretch.length; i++) {
    const c = canonicalStretch.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) digits++;
    else if (c >= 0x61 && c <= 0x66) hexLetters++;
  }
  const n = canonicalStretch.length;
  return !(digits + hexLetters >= n * 0.9 && digits >= n * 0.25 && hexLetters >= n * 0.25);
}

/** Adds a stretch to a sorted list of disjoint ones and returns the merged stretch that contains it. */
function addPiece(list: [number, number][], start: number, end: number): [number, number] {
  let s = start;
  let e = end;
  const kept: [number, number][] = [];
  for (const [a, b] of list) {
    if (b + MAX_PIECE_GAP < s || a > e + MAX_PIECE_GAP) kept.push([a, b]);
    else {
      s = Math.min(s, a);
      e = Math.max(e, b);
    }
  }
  kept.push([s, e]);
  kept.sort((x, y) => x[0] - y[0]);
  list.splice(0, list.length, ...kept);
  return [s, e];
}

export function createPrivateTextCheck(deps: PrivateTextCheckDeps) {
  const groups = new Map<string, { index: PrivateIndex; refresh(): Promise<FolderRefresh> }>();
  let admin: { index: PrivateIndex; refresh(): Promise<FolderRefresh> } | undefined;
  const runs = new Map<number, RunState>();

  const groupSource = (groupId: string) => {
    let source = groups.get(groupId);
    if (!source) {
      const index = createPrivateIndex();
      const folder = createFolderSource(index, {
        root: deps.groupFolder(groupId),
        scope: 'group',
        label: 'the group folder',
        // What the chat posted (its members' and strangers' files) is the chat's already.
        skipFolder: (rel) => rel === 'media',
      });
      source = { index, refresh: () => folder.refresh() };
      groups.set(groupId, source);
    }
    return source;
  };
  const adminSource = () => {
    if (deps.adminProject === undefined) return undefined;
    if (!admin) {
      const index = createPrivateIndex();
      const folder = createFolderSource(index, {
        root: deps.adminProject,
        scope: 'owner',
        label: 'the admin project',
        ...(deps.adminProjectSkip ? { skipFolder: deps.adminProjectSkip } : {}),
      });
      admin = { index, refresh: () => folder.refresh() };
    }
    return admin;
  };

  const runState = (runId: number): RunState => {
    let state = runs.get(runId);
    if (!state) {
      state = {
        secret: createPrivateIndex(),
        secretChars: 0,
        answers: 0,
        pieces: new Map(),
        tail: new Map(),
      };
      runs.set(runId, state);
    }
    return state;
  };

  /** The indexes a run's payloads are matched against, brought up to date once per run. */
  const indexesOf = async (identity: RunIdentity, state: RunState): Promise<PrivateIndex[]> => {
    const group = groupSource(identity.group.id);
    const project = identity.group.isAdmin ? adminSource() : undefined;
    state.ready ??= (async () => {
      const refreshed = await group.refresh();
      if (refreshed.leftOut.length > 0) deps.onLeftOut?.(identity, 'the group folder', refreshed.leftOut);
      if (project) {
        const p = await project.refresh();
        if (p.leftOut.length > 0) deps.onLeftOut?.(identity, 'the admin project', p.leftOut);
      }
    })();
    await state.ready;
    return project ? [group.index, project.index, state.secret] : [group.index, state.secret];
  };

  return {
    /** Reads the run's private text ahead of its first payload (the folder walk), so the first check is cheap. */
    async prepare(identity: RunIdentity): Promise<void> {
      await indexesOf(identity, runState(identity.runId));
    },

    async check(
      identity: RunIdentity,
      sink: PrivateSink,
      payload: PrivateTextPayload,
    ): Promise<PrivateTextVerdict> {
      const scopes = scopesFor(identity, sink);
      if (scopes.size === 0) return {};
      const state = runState(identity.runId);
      const indexes = await indexesOf(identity, state);
      const tail = state.tail.get(sink) ?? '';
      const joined = tail + payload.text;
      const readings: PayloadViews[] = [textViews(joined)];
      if (payload.file) readings.push(fileViews(payload.file));
      const unread = readings.find((r) => r.unread !== undefined)?.unread;

      let best: { index: PrivateIndex; overlap: PrivateOverlap; form: string; chars: number } | undefined;
      const consider = (
        index: PrivateIndex,
        overlap: PrivateOverlap,
        form: string,
        start: number,
        end: number,
      ) => {
        const chars = end - start;
        if (chars < MIN_OVERLAP || (best && best.chars >= chars)) return;
        if (!wordsOf(canonical(index.excerpt(overlap.key, start, end, 10_000)))) return;
        best = { index, overlap: { ...overlap, start, end }, form, chars };
      };
      let pieces = state.pieces.get(sink);
      if (!pieces) state.pieces.set(sink, (pieces = new Map()));
      for (const { views } of readings) {
        for (const view of views) {
          for (const index of indexes) {
            for (const overlap of index.overlaps(view.text, scopes)) {
              consider(index, overlap, view.form, overlap.start, overlap.end);
              const key = overlap.key;
              let list = pieces.get(key);
              if (!list) pieces.set(key, (list = []));
              const [s, e] = addPiece(list, overlap.start, overlap.end);
              if (e - s > overlap.end - overlap.start)
                consider(index, overlap, `${view.form}, in pieces across payloads`, s, e);
            }
          }
        }
      }
      state.tail.set(sink, best ? '' : (TRAILING_BASE64.exec(joined)?.[0] ?? '').slice(-TAIL_CHARS));
      const verdict: PrivateTextVerdict = unread === undefined ? {} : { unread };
      if (!best) return verdict;
      const { index, overlap, form, chars } = best;
      return {
        ...verdict,
        match: {
          from: overlap.label,
          excerpt: index.excerpt(overlap.key, overlap.start, overlap.end, EXCERPT_CHARS),
          form,
          chars,
        },
      };
    },

    /** What a `secret_data` service answered this run: private from every chat but the admin chat. */
    addSecretAnswer(runId: number, service: string, text: string): { leftOut: boolean } {
      const state = runState(runId);
      if (state.secretChars + text.length > MAX_SECRET_ANSWER_CHARS) return { leftOut: true };
      state.secretChars += text.length;
      state.answers += 1;
      // The host's own fence around the answer is not the service's words (and every fenced result has it).
      const words = text.replace(/<<<[^<>\n]{0,300}>>>/g, '\n');
      state.secret.set(`answer:${state.answers}`, {
        scope: 'owner',
        label: `what ${service} returned in this run`,
        text: words,
      });
      return { leftOut: false };
    },

    forget(runId: number): void {
      runs.delete(runId);
    },
  };
}
