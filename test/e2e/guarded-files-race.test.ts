/**
 * The race of issue 36 with a real container: a command in the group's container (started with docker exec
 * under the commands' uid and the agent's gid, as the agent's bash tool would run it) swaps an attachment for
 * a relative symlink to the host's database (`f -> ../../carapace.db`), a folder for a symlink to the data
 * folder, and the day's media folder for the same, as fast as a shell can, while the agent sends 100
 * attachments and a member sends 100 photos the host stores. No byte of the database reaches the chat and
 * no photo lands outside the group folder. The hard-link case is the host-side race test's
 * (test/integration/router/guarded-files-race.test.ts): a container cannot link a file it cannot see.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { FakeTelegram } from '../fakes/fake-telegram-api.ts';
import { createGate, turnResponder } from '../fakes/e2e-responders.ts';
import { reply } from '../fakes/fake-provider-script.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { PNG_1X1 } from '../helpers/media-samples.ts';
import { eventually, type E2eHost } from './e2e-harness.ts';
import { startTelegramE2eHost } from './telegram-e2e-host.ts';

const OWNER = 7201;
const MEMBER = { id: 7202, first_name: 'Mia' };
const FAMILY = { id: -1007201, type: 'supergroup' as const, title: 'Family' };
const SENDS = 100;
const PHOTOS = 100;

/** The command's loop: each swap one rename, so the name is always there, and always something else. */
const FLIPPER = `
cd /workspace/group
day=$(date -u +%F)
mkdir -p dir "media/$day"
echo inside > f; echo inside > dir/carapace.db
while :; do
  ln -s ../../carapace.db f.new; mv -T f.new f
  mv -T dir dir.away; ln -s ../.. dir
  mv -T "media/$day" media/day.away; ln -s ../../.. "media/$day"
  echo inside > f.new; mv -T f.new f
  rm -f dir; mv -T dir.away dir
  rm -f "media/$day"; mv -T media/day.away "media/$day"
done
`;

await describeDocker(
  'e2e: a container rearranging its group folder while the host reads and writes it',
  () => {
    let tg: FakeTelegram;
    let h: E2eHost;

    beforeAll(async () => {
      ({ tg, h } = await startTelegramE2eHost({
        owner: OWNER,
        groups: { family: String(FAMILY.id) },
        config: { runs: { max_attempts: 1 } },
      }));
    }, 240_000);
    afterAll(async () => {
      await h?.stop();
      await tg?.close();
    }, 60_000);

    it('sends no byte of the host database and stores no file outside the group folder', async () => {
      const dataBefore = fs.readdirSync(h.paths.dataDir).sort();
      const flipping = createGate();
      h.fake.setResponder(
        turnResponder(
          async () => {
            await flipping.opened;
            return reply.toolCalls(
              Array.from({ length: SENDS }, (_, i) => ({
                name: 'send_message',
                arguments: { text: `file ${i}`, attachment: i % 2 === 0 ? 'f' : 'dir/carapace.db' },
              })),
            );
          },
          () => reply.text('done'),
        ),
      );
      tg.message({ chat: FAMILY, from: MEMBER, text: '@Andy send me the files' });
      const container = await h.runningContainer('family', 90_000);
      // docker exec as the commands' uid and the agent's gid (which may write the group folder): what a command the agent ran in the background would do.
      const flipper = spawn('docker', ['exec', '-u', '10002:10001', container.Id, 'sh', '-c', FLIPPER], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let flipperErrors = '';
      flipper.stderr.on('data', (chunk: Buffer) => (flipperErrors += chunk.toString()));
      const group = path.join(h.paths.groupsDir, 'family');
      await eventually(`the command swapping the file (${container.Name})`, () => {
        if (flipper.exitCode !== null) throw new Error(`the command ended: ${flipperErrors}`);
        try {
          return fs.lstatSync(path.join(group, 'f')).isSymbolicLink() || undefined;
        } catch {
          return undefined;
        }
      });
      flipping.open();
      for (let i = 0; i < PHOTOS; i++)
        tg.media({ chat: FAMILY, from: MEMBER, kind: 'photo', bytes: PNG_1X1 });

      const storedPhotos = () =>
        h.host.store.db
          .prepare("SELECT count(*) FROM messages WHERE group_id = 'family' AND media LIKE '%\"stored\"%'")
          .pluck()
          .get() as number;
      const photos = () =>
        h.host.store.db
          .prepare("SELECT count(*) FROM messages WHERE group_id = 'family' AND media IS NOT NULL")
          .pluck()
          .get() as number;
      await eventually('every photo taken in', () => photos() >= PHOTOS || undefined, 240_000);
      await eventually('the run over', () => h.runs('family').find((r) => r.status !== 'running'), 240_000);

      const sent = tg.sentFiles();
      const leaked = sent.filter((f) => f.bytes.includes('SQLite format 3'));
      // The staging folder of approved copies is the host's own; anything else new there came through a swap.
      const newInDataFolder = fs
        .readdirSync(h.paths.dataDir)
        .filter((name) => !dataBefore.includes(name) && name !== 'outbox-files');
      console.log(
        JSON.stringify({ sent: sent.length, stored: storedPhotos(), leaked: leaked.length, newInDataFolder }),
      );
      expect({ leaked: leaked.length, newInDataFolder }).toEqual({ leaked: 0, newInDataFolder: [] });
      // What did go out was the group's own file; some sends were refused, some not (the swaps decide).
      for (const f of sent) expect(f.bytes.toString('utf8')).toBe('inside\n');
      h.fake.setResponder(undefined);
    }, 600_000);
  },
);
