import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { giveUpNotices, type FailureKind } from '../../../host/router/run-notices.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { makeTempDir, removeTempDir } from '../../helpers/temp-dir.ts';

let dir: string;
let store: Store;
beforeEach(() => {
  dir = makeTempDir();
  store = openStore({ file: path.join(dir, 'carapace.db') });
  store.groups.add({ id: 'main', channel: 'local', chatId: 'main', name: 'Admin', isAdmin: true });
  store.groups.add({ id: 'fam', channel: 'local', chatId: 'fam', name: 'Family', isAdmin: false });
});
afterEach(() => {
  store.close();
  removeTempDir(dir);
});

const notices = (groupId: string, kind: Exclude<FailureKind, 'capped'>, reason: string) => {
  const group = store.groups.get(groupId);
  if (!group) throw new Error(`no group ${groupId}`);
  return giveUpNotices({ group, givenThrough: 7, kind, reason });
};

describe('the notices of a run that gave up', () => {
  it('tells a provider that hung as one failure the next message retries, never "until this is fixed"', () => {
    const reason = 'the LLM provider did not start answering within 5 s ([gateway] first_byte_timeout_ms)';
    const fam = notices('fam', 'transient', reason);
    expect(fam.group.map((i) => i.text)).toEqual([
      'Sorry, I could not answer that. Send the message again to try once more.',
    ]);
    expect(fam.owner?.text).toBe(
      `Group fam got no answer (one failure, not retried; its next message tries again): ${reason}`,
    );
    const main = notices('main', 'transient', reason);
    expect(main.group.map((i) => i.text)).toEqual([
      `Sorry, I could not answer that (${reason}). That was one failure, not retried: your next message tries again.`,
    ]);
    expect(main.owner).toBeUndefined();
    for (const text of [...fam.group, ...main.group].map((i) => i.text).concat(fam.owner?.text ?? ''))
      expect(text).not.toMatch(/until this is fixed|cannot answer yet|The owner has been told/);
  });

  it('keeps "until this is fixed" for what the owner must fix, like a refused key', () => {
    const reason = "the LLM provider rejected the host's API key (HTTP 401)";
    const fam = notices('fam', 'final', reason);
    expect(fam.group.map((i) => i.text)).toEqual([
      'Sorry, I cannot answer right now. The owner has been told.',
    ]);
    expect(fam.owner?.text).toBe(
      `Group fam got no answer (it cannot be answered until this is fixed): ${reason}`,
    );
    expect(notices('main', 'final', reason).group[0]?.text).toBe(`I cannot answer yet: ${reason}.`);
  });
});
