import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAdminChats } from '../../../host/admin/admin-chats.ts';
import type { Channel } from '../../../host/channels/channel.ts';
import {
  createSpendCap,
  spendCapMessage,
  spendLevel,
  type SpendCap,
} from '../../../host/gateway/spend/spend-cap.ts';
import type { SqliteUsageStore } from '../../../host/gateway/spend/usage-store-sqlite.ts';
import { sendNotices } from '../../../host/router/run-notices.ts';
import { createSpendNotices, spendCapNotices } from '../../../host/router/spend-notices.ts';
import type { NewOutboxItem } from '../../../host/store/outbox-store.ts';
import type { Store } from '../../../host/store/store.ts';
import { openSpendDb, type SpendDb } from '../../helpers/spend-db.ts';

const DAY = '2026-03-31';
const NEXT_DAY = '2026-04-01';

let db: SpendDb;
let store: Store;
let usage: SqliteUsageStore;

beforeEach(() => {
  db = openSpendDb(['main', 'family']);
  ({ store, usage } = db);
});
afterEach(() => db.close());

/**
 * The gateway's spend cap wired as the host wires it: its warning becomes the owner's notice, stored in the
 * real outbox through the admin chats. A new call is a host (re)start over the same database.
 */
function startHost(capUsd = 1, channels: Channel[] = []) {
  const adminChats = createAdminChats({
    groups: store.groups,
    channels: () => channels,
    notifyChannels: () => undefined,
    enqueue: (item) => store.outbox.addAll([item]),
  });
  const sinks = {
    enqueue: (item: NewOutboxItem) => store.outbox.addAll([item]),
    notifyOwner: (key: string, text: string) => adminChats.notify(key, text),
  };
  const notices = createSpendNotices({ group: (id) => store.groups.get(id), ...sinks });
  const cap = createSpendCap({
    config: () => ({ daily_cap_usd: capUsd, group_caps_usd: {} }),
    usageStore: usage,
    onSpendWarning: notices.warning,
    onNotifyError: (error) => {
      throw error;
    },
  });
  /** What the router tells when it refuses a message of the group at the cap. */
  const refuse = (groupId = 'family', day = DAY) => {
    const group = store.groups.get(groupId);
    if (!group) throw new Error(`no group ${groupId}`);
    sendNotices(
      spendCapNotices(group, day, spendCapMessage({ daily_cap_usd: capUsd, group_caps_usd: {} }, groupId)),
      sinks,
    );
  };
  return { cap, refuse };
}

/** One request of `micros` through the cap, settled at its full cost. */
async function spend(cap: SpendCap, micros: number, day = DAY, groupId = 'family'): Promise<boolean> {
  const r = await cap.reserve(groupId, day, micros);
  if (!r.ok) return false;
  await r.reservation.settle(() => {
    usage.recordUsage({
      runId: '1',
      groupId,
      day,
      model: 'm',
      promptTokens: 1,
      completionTokens: 1,
      costMicros: micros,
    });
    return micros;
  });
  return true;
}

/** What the chats hold: [chat, text] in the order stored. */
function sent(): [string, string][] {
  return store.db
    .prepare<[], { chat_id: string; text: string }>('SELECT chat_id, text FROM outbox ORDER BY id')
    .all()
    .map((r) => [r.chat_id, r.text]);
}

describe('spend notices', () => {
  it('names the level a settled spend calls for: under, the 80 % warning, the cap', () => {
    expect(spendLevel(799_999, 1_000_000)).toBe('under');
    expect(spendLevel(800_000, 1_000_000)).toBe('warning');
    expect(spendLevel(999_999, 1_000_000)).toBe('warning');
    expect(spendLevel(1_000_000, 1_000_000)).toBe('cap');
    expect(spendLevel(0, 0)).toBe('cap');
  });

  it('warns the owner once at 80 %; crossing the cap or refusing a request tells the group nothing', async () => {
    const { cap } = startHost();
    await spend(cap, 700_000);
    expect(sent()).toEqual([]);
    await spend(cap, 100_000); // 80 %
    await spend(cap, 100_000); // 90 %: warned already
    await spend(cap, 100_000); // 100 %: the answer of this request is still on its way
    expect(await spend(cap, 1)).toBe(false); // refused: its run hears it, and the router tells the group
    expect(sent()).toEqual([
      [
        'main',
        'Spend: group family has spent $0.8000 of its daily spend cap of $1.0000 today (80 %); ' +
          'at the cap it gets no answers until tomorrow ([gateway].daily_cap_usd).',
      ],
    ]);
  });

  it('warns the owner, and only the owner, when one request goes from under 80 % past the cap', async () => {
    const { cap } = startHost();
    await spend(cap, 500_000);
    await spend(cap, 600_000);
    expect(sent()).toEqual([
      [
        'main',
        'Spend: group family has spent $1.1000 of its daily spend cap of $1.0000 today (110 %); ' +
          'at the cap it gets no answers until tomorrow ([gateway].daily_cap_usd).',
      ],
    ]);
  });

  it('tells a refusal with one line to the group and one notice to the owner naming the setting', () => {
    const { refuse } = startHost();
    refuse();
    refuse();
    expect(sent()).toEqual([
      ['family', 'This group reached its daily spending limit; I cannot answer until tomorrow.'],
      [
        'main',
        'Group family gets no answers until tomorrow: daily spend cap of $1.00 reached for group family; ' +
          'raise [gateway].daily_cap_usd or wait until tomorrow.',
      ],
    ]);
  });

  it('sends each notice once per day across a host restart on the same day, and again the next day', async () => {
    await spend(startHost().cap, 850_000);
    expect(sent()).toHaveLength(1);
    // Restarted the same day: the new gateway remembers nothing, the outbox's keys do.
    const restarted = startHost();
    await spend(restarted.cap, 10_000);
    expect(sent()).toHaveLength(1);
    await spend(restarted.cap, 200_000);
    restarted.refuse();
    startHost().refuse();
    expect(sent()).toHaveLength(3);

    const nextDay = startHost();
    await spend(nextDay.cap, 900_000, NEXT_DAY);
    expect(sent()).toHaveLength(4);
    expect(sent()[3]?.[1]).toMatch(/^Spend: group family has spent \$0\.9000/);
    nextDay.refuse('family', NEXT_DAY);
    expect(sent()).toHaveLength(6);
  });

  it('tells about the admin group in every admin chat: the warning, then the refusal with its setting', async () => {
    const telegram = { name: 'telegram', adminChatId: () => '42' } as unknown as Channel;
    const { cap, refuse } = startHost(1, [telegram]);
    await spend(cap, 800_000, DAY, 'main');
    await spend(cap, 200_000, DAY, 'main');
    refuse('main');
    const warning = expect.stringMatching(/^Spend: group main has spent \$0\.8000/);
    const capped = expect.stringMatching(
      /^The admin group reached its daily LLM spending cap, so I cannot answer until tomorrow: daily spend cap of \$1\.00 reached for group main; raise/,
    );
    expect(sent()).toEqual([
      ['main', warning],
      ['42', warning],
      ['main', capped],
      ['42', capped],
    ]);
  });
});
