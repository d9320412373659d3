/**
 * Pre-started containers through the whole product: a host with `[runs.prestart]` on answers a group's
 * next message in the container it started ahead of time, a new one for each run, and leaves none behind
 * when it stops.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { reply } from '../fakes/fake-provider.ts';
import { turnResponder } from '../fakes/e2e-responders.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { LABEL_DATA, dataFolderLabel } from '../../host/containers/run/data-folder-label.ts';
import { LABEL_GROUP } from '../../host/containers/run/container-spec.ts';
import { eventually, startE2eHost, type E2eHost } from './e2e-harness.ts';

await describeDocker('e2e: pre-started containers', () => {
  let h: E2eHost;
  /** The containers of group main that were running while the provider answered, per turn. */
  const runningAtAnswer: string[][] = [];

  const containersOf = async (group: string, status?: string) =>
    (
      await h.docker.listContainers({
        all: true,
        filters: {
          label: [`${LABEL_DATA}=${dataFolderLabel(h.paths.dataDir)}`, `${LABEL_GROUP}=${group}`],
          ...(status ? { status: [status] } : {}),
        },
      })
    ).map((c) => c.Names[0]?.slice(1) ?? '');
  const containersOfMain = (status?: string) => containersOf('main', status);

  beforeAll(async () => {
    h = await startE2eHost({
      config: { runs: { retry_base_ms: 200, prestart: { count: 2, memory_mb: 256, idle_ms: 600_000 } } },
      responder: turnResponder(async (t) => {
        // Turns of main only (family's messages mention the assistant).
        if (!t.text.startsWith('@Andy')) runningAtAnswer.push(await containersOfMain('running'));
        return reply.text(`heard: ${t.text}`);
      }),
    });
  }, 180_000);
  afterAll(async () => {
    // Also removes the folders; the host itself was stopped by the test (a second stop does nothing).
    await h?.stop();
  }, 60_000);

  it("status shows the pool, and a removed group's pre-started container is stopped at once, not after idle_ms", async () => {
    await h.addLocalGroups('family');
    const asked = await h.send('family', '@Andy hello');
    expect(asked.stdout).toBe('heard: @Andy hello\n');
    type Status = {
      host: { prestart: { count: number; memoryMb: number; containers: { groupId: string }[] } };
    };
    const statusJson = async () => JSON.parse((await h.cli(['status', '--json'])).stdout) as Status;
    // Docker says "running" before the agent inside is ready; the pool lists it from then on.
    const json = await eventually('a pre-started container for family in the pool', async () => {
      const now = await statusJson();
      return now.host.prestart.containers.some((c) => c.groupId === 'family') ? now : undefined;
    });
    expect(json.host.prestart).toMatchObject({ count: 2, memoryMb: 256 });
    expect(await containersOf('family', 'running')).toHaveLength(1);
    const status = await h.cli(['status']);
    expect(status.stdout).toMatch(
      /pre-started containers: \d of 2 ready \(.*family.*\), memory \d+ MiB of 256 MiB/,
    );

    const removed = await h.cli(['groups', 'remove', 'family']);
    expect(removed).toMatchObject({ code: 0, stderr: '' });
    // idle_ms is ten minutes: gone within the wait means the host stopped it when told.
    await eventually('family has no container left', async () =>
      (await containersOf('family')).length === 0 ? true : undefined,
    );
    const after = await statusJson();
    expect(after.host.prestart.containers.map((c) => c.groupId)).not.toContain('family');
  }, 180_000);

  it('a config reload that changes the time zone replaces the waiting container at once, with the new TZ', async () => {
    await h.addLocalGroups('tz');
    expect((await h.send('tz', '@Andy hello')).stdout).toBe('heard: @Andy hello\n');
    // The run's own container is removed after the reply; then only the one started ahead is left. The
    // pool must list it too: while the run's container is still there and the next one not yet created,
    // "one container, running" would be the run's own (seen on a loaded machine).
    const [waiting] = await eventually('a pre-started container for tz, and no other', async () => {
      const [all, running, status] = await Promise.all([
        containersOf('tz'),
        containersOf('tz', 'running'),
        h.cli(['status', '--json']),
      ]);
      const pooled = (
        JSON.parse(status.stdout) as { host: { prestart: { containers: { groupId: string }[] } } }
      ).host.prestart.containers.some((c) => c.groupId === 'tz');
      return pooled && all.length === 1 && running.length === 1 ? running : undefined;
    });
    const set = await h.cli(['config', 'set', 'assistant.timezone', '"Europe/Berlin"']);
    expect(set.code).toBe(0);
    // idle_ms is ten minutes: a new one within the wait means the reload replaced it.
    const [replaced] = await eventually('a new pre-started container for tz', async () => {
      const running = await containersOf('tz', 'running');
      return running.length === 1 && running[0] !== waiting ? running : undefined;
    });
    const env = (await h.docker.getContainer(replaced!).inspect()).Config.Env;
    expect(env).toContain('TZ=Europe/Berlin');
    expect((await h.cli(['groups', 'remove', 'tz'])).code).toBe(0);
    await eventually('tz has no container left', async () =>
      (await containersOf('tz')).length === 0 ? true : undefined,
    );
  }, 180_000);

  it('answers in the container started ahead, a new one per run, and a host stop removes the one waiting', async () => {
    const first = await h.send('main', 'one');
    expect(first.stdout).toBe('heard: one\n');
    // main was active: its next container is created and started without a message.
    const [waiting] = await eventually('a pre-started container for main', async () => {
      const running = await containersOfMain('running');
      return running.length === 1 && !running.includes(runningAtAnswer[0]?.[0] ?? '') ? running : undefined;
    });

    const second = await h.send('main', 'two');
    expect(second.stdout).toBe('heard: two\n');
    // The second turn ran in the waiting container: no other container of main was running meanwhile.
    expect(runningAtAnswer[1]).toEqual([waiting]);
    expect(h.runs('main').map((r) => r.status)).toEqual(['succeeded', 'succeeded']);

    // A third, again in a fresh pre-started container, not the one that served the second turn.
    await eventually('the next pre-started container', async () => {
      const running = await containersOfMain('running');
      return running.length === 1 && running[0] !== waiting;
    });
    const third = await h.send('main', 'three');
    expect(third.stdout).toBe('heard: three\n');
    expect(runningAtAnswer[2]).toHaveLength(1);
    expect(runningAtAnswer[2]).not.toContain(waiting);

    await eventually('a container waiting for the fourth turn', async () => {
      const running = await containersOfMain('running');
      return running.length === 1 && running[0] !== runningAtAnswer[2]?.[0];
    });
    await h.host.stop('test over');
    expect(await containersOfMain()).toEqual([]);
  }, 180_000);
});
