/**
 * A pre-started container of the admin group, whose project tree the host watches instead of walking it
 * at every run (tree-watch.ts): a secret planted deep in the project after the container warmed, and a
 * folder swapped for a symlink out of the project, still keep a run from taking it. The run gets a fresh
 * container whose mount plan hides the new secret.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { reply } from '../fakes/fake-provider.ts';
import { turnResponder } from '../fakes/e2e-responders.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { LABEL_DATA, dataFolderLabel } from '../../host/containers/run/data-folder-label.ts';
import { LABEL_GROUP } from '../../host/containers/run/container-spec.ts';
import { eventually, startE2eHost, type E2eHost } from './e2e-harness.ts';

await describeDocker('e2e: a watched project tree and pre-started containers', () => {
  let h: E2eHost;
  let project: string;
  let outside: string;
  /** Per turn: the running containers of main while the provider answered, and their mount targets. */
  const atAnswer: { names: string[]; mountsOf: Map<string, string[]> }[] = [];

  const containersOfMain = async () =>
    (
      await h.docker.listContainers({
        filters: {
          label: [`${LABEL_DATA}=${dataFolderLabel(h.paths.dataDir)}`, `${LABEL_GROUP}=main`],
          status: ['running'],
        },
      })
    ).map((c) => c.Names[0]?.slice(1) ?? '');

  /** The next container waiting for main, other than the ones that served a turn. */
  const nextWaiting = () =>
    eventually('a pre-started container for main', async () => {
      const running = await containersOfMain();
      const served = new Set(atAnswer.flatMap((a) => a.names));
      return running.length === 1 && !served.has(running[0] ?? '') ? running[0] : undefined;
    });

  /** The mounts of the container that served a turn, which must be another than `warmed`. */
  const servedBy = (turn: (typeof atAnswer)[number] | undefined, warmed: string | undefined): string[] => {
    const others = (turn?.names ?? []).filter((n) => n !== warmed);
    expect(others).toHaveLength(1);
    return turn?.mountsOf.get(others[0] ?? '') ?? [];
  };

  beforeAll(async () => {
    const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-watched-')));
    project = path.join(base, 'project');
    outside = path.join(base, 'outside');
    fs.mkdirSync(path.join(project, 'apps', 'web', 'config'), { recursive: true });
    fs.mkdirSync(path.join(project, 'apps', 'api', 'keys'), { recursive: true });
    fs.writeFileSync(path.join(project, 'apps', 'web', 'config', 'settings.json'), '{}');
    fs.writeFileSync(path.join(project, 'apps', 'api', 'keys', '.env.local'), 'TOKEN=inside');
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'notes.txt'), 'outside the project');
    h = await startE2eHost({
      adminProject: project,
      config: { runs: { retry_base_ms: 200, prestart: { count: 1, memory_mb: 256, idle_ms: 600_000 } } },
      responder: turnResponder(async () => {
        const names = await containersOfMain();
        const mountsOf = new Map<string, string[]>();
        for (const n of names) {
          const info = await h.docker
            .getContainer(n)
            .inspect()
            .catch(() => undefined);
          if (info)
            mountsOf.set(
              n,
              info.Mounts.map((m) => m.Destination),
            );
        }
        atAnswer.push({ names, mountsOf });
        return reply.text('ok');
      }),
    });
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
    if (project) fs.rmSync(path.dirname(project), { recursive: true, force: true });
  }, 60_000);

  it('a secret planted and a folder swapped for a symlink after the container warmed keep runs from taking it', async () => {
    await h.send('main', 'one');
    // Two turns in waiting containers: the first verifies the watched tree, the second trusts it.
    for (const text of ['two', 'three']) {
      const waiting = await nextWaiting();
      await h.send('main', text);
      expect(atAnswer.at(-1)?.names).toEqual([waiting]);
    }

    const warmed = await nextWaiting();
    fs.writeFileSync(path.join(project, 'apps', 'web', 'config', '.env'), 'TOKEN=late');
    await h.send('main', 'four');
    // The run's own container, not the warmed one (which may still be going away).
    const fourth = servedBy(atAnswer.at(-1), warmed);
    expect(fourth).toContain('/workspace/project/apps/web/config/.env');

    const warmedAgain = await nextWaiting();
    fs.renameSync(path.join(project, 'apps', 'api', 'keys'), path.join(outside, 'keys'));
    fs.symlinkSync(path.join(outside, 'keys'), path.join(project, 'apps', 'api', 'keys'));
    await h.send('main', 'five');
    // The symlink is not followed: the fresh plan has no shadow in it, the warmed container's had one.
    const fifth = servedBy(atAnswer.at(-1), warmedAgain);
    expect(fifth).toContain('/workspace/project/apps/web/config/.env');
    expect(fifth).not.toContain('/workspace/project/apps/api/keys/.env.local');
    expect(h.runs('main').map((r) => r.status)).toEqual(Array(5).fill('succeeded'));
  }, 240_000);
});
