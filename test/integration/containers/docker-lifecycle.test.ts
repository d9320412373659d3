import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import Docker from 'dockerode';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchContainer, type ContainerProcess } from '../../../host/containers/run/container-launch.ts';
import { removeOrphans } from '../../../host/containers/run/container-orphans.ts';
import { LAUNCHER_CAPABILITIES } from '../../../host/containers/run/container-spec.ts';
import { AGENT_UID, AGENT_USER, COMMAND_UID } from '../../../host/containers/image/image-base-offline.ts';
import { ensureProbeImage } from '../../fixtures/agent-entries/probe-image.ts';
import { describeDocker } from '../../helpers/docker-available.ts';
import { fakeClock } from '../../helpers/fake-clock.ts';
import { containerSpecs } from '../../helpers/container-specs.ts';

const docker = new Docker();
const testRun = randomUUID().slice(0, 8);
const hostInstanceId = `test-host-${testRun}`;
let image = '';
let tmp = '';

const spec = containerSpecs({ groupId: 'lifecycle', testRun, image: () => image, cpus: 0.5 });

function readLines(stream: Readable, count: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    const lines: string[] = [];
    const onData = (chunk: Buffer) => {
      buffer += chunk.toString();
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0 && lines.length < count) {
        lines.push(buffer.slice(0, newline));
        buffer = buffer.slice(newline + 1);
      }
      if (lines.length >= count) {
        stream.off('data', onData);
        resolve(lines);
      }
    };
    stream.on('data', onData);
    stream.once('end', () =>
      reject(new Error(`stream ended after ${lines.length} of ${count} lines: ${buffer}`)),
    );
  });
}

await describeDocker('docker container lifecycle', () => {
  const running: ContainerProcess[] = [];

  beforeAll(async () => {
    image = await ensureProbeImage(docker);
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-'));
  }, 15 * 60_000);

  afterAll(async () => {
    await Promise.all(running.map((c) => c.stop('test cleanup', 0)));
    await removeOrphans(docker, {
      exceptHostInstanceId: 'none',
      onlyWithLabels: { 'carapace.test': testRun },
    });
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('runs hardened: docker inspect shows user, caps, read-only root, tmpfs, limits, mounts, network, labels', async () => {
    const rw = fs.mkdtempSync(path.join(tmp, 'rw-'));
    const ro = fs.mkdtempSync(path.join(tmp, 'ro-'));
    const inspected = spec({
      groupId: 'inspect@g.us',
      mounts: [
        { hostPath: rw, containerPath: '/workspace/group', readOnly: false },
        { hostPath: ro, containerPath: '/workspace/extra/ro', readOnly: true },
      ],
      env: { PROBE_MODE: 'echo', SOME_VAR: 'x' },
      limits: { memoryMb: 300, cpus: 0.75, pids: 77 },
    });
    const proc = await launchContainer(docker, inspected);
    running.push(proc);
    expect(proc.name).toBe(`carapace-inspect-g.us-${inspected.runId}`);
    const info = await docker.getContainer(proc.id).inspect();
    expect(info.Name).toBe(`/${proc.name}`);
    expect(info.State.Running).toBe(true);
    // The launcher starts as root with three capabilities and hands the agent and commands their own uids.
    expect(info.Config.User).toBe('0:0');
    expect(info.Config.Cmd).toEqual([AGENT_USER, `${COMMAND_UID}:${AGENT_UID}`]);
    expect(info.Config.Env).toContain('SOME_VAR=x');
    expect(info.Config.Labels).toMatchObject({
      'carapace.managed': '1',
      'carapace.group': 'inspect@g.us',
      'carapace.run': inspected.runId,
      'carapace.host': hostInstanceId,
    });
    const host = info.HostConfig;
    expect(host.CapDrop).toEqual(['ALL']);
    expect(host.CapAdd).toEqual([...LAUNCHER_CAPABILITIES]);
    expect(host.Privileged).toBe(false);
    expect(host.SecurityOpt).toEqual(['no-new-privileges']);
    expect(host.ReadonlyRootfs).toBe(true);
    expect(host.Tmpfs).toEqual({ '/tmp': 'rw,noexec,nosuid,size=64m' });
    expect(host.Memory).toBe(300 * 1024 * 1024);
    expect(host.MemorySwap).toBe(300 * 1024 * 1024);
    expect(host.NanoCpus).toBe(750_000_000);
    expect(host.PidsLimit).toBe(77);
    expect(host.AutoRemove).toBe(true);
    expect(host.NetworkMode).toBe('bridge');
    expect(host.ExtraHosts).toEqual(['host.docker.internal:host-gateway']);
    const mounts = info.Mounts.map((m) => ({
      source: m.Source,
      destination: m.Destination,
      rw: m.RW,
      type: m.Type,
    }));
    expect(mounts).toEqual(
      expect.arrayContaining([
        { source: rw, destination: '/workspace/group', rw: true, type: 'bind' },
        { source: ro, destination: '/workspace/extra/ro', rw: false, type: 'bind' },
      ]),
    );
    expect(mounts).toHaveLength(2);
    expect(Object.keys(info.NetworkSettings.Networks)).toEqual(['bridge']);
    await proc.stop('inspected', 0);
  });

  it('talks over attached stdio and exits 0 when the host closes stdin', async () => {
    const proc = await launchContainer(docker, spec({ env: { PROBE_MODE: 'echo' } }));
    running.push(proc);
    const lines = readLines(proc.stdout, 2);
    proc.stdin.write('{"jsonrpc":"2.0","method":"run.start"}\n');
    proc.stdin.write('second line\n');
    expect(await lines).toEqual(['{"jsonrpc":"2.0","method":"run.start"}', 'second line']);
    proc.stdin.end();
    expect(await proc.exited).toEqual({ exitCode: 0, reason: 'exited' });
    // AutoRemove: the container is gone once exited resolves.
    await expect(docker.getContainer(proc.id).inspect()).rejects.toMatchObject({ statusCode: 404 });
  });

  it('reports the exit code of an agent that exits on its own, even at once', async () => {
    const proc = await launchContainer(docker, spec({ env: { PROBE_MODE: 'exit', PROBE_EXIT_CODE: '3' } }));
    expect(await proc.exited).toEqual({ exitCode: 3, reason: 'exited' });
  });

  /** A probe on a fake clock: its timeouts fire only as the test moves the clock (no grace: one kill). */
  async function onFakeClock(
    mode: 'silent' | 'chatty',
    timeouts: { hardMs: number; idleMs: number },
    options: { deferTimeouts?: boolean } = {},
  ) {
    const clock = fakeClock(0);
    const proc = await launchContainer(
      docker,
      spec({ env: { PROBE_MODE: mode }, timeouts: { ...timeouts, graceMs: 0 } }),
      { ...options, clock: clock.clock },
    );
    running.push(proc);
    return { clock, proc };
  }
  /** The next line a chatty probe printed; its touch of the idle timer has run by then. */
  const nextOutput = (proc: ContainerProcess) => once(proc.stdout, 'data');

  it('kills a run past its hard timeout and says so', async () => {
    const { clock, proc } = await onFakeClock('chatty', { hardMs: 1500, idleMs: 60_000 });
    clock.advance(1499);
    await nextOutput(proc);
    clock.advance(1);
    const exit = await proc.exited;
    expect(exit).toMatchObject({ reason: 'hard_timeout', detail: 'still running after 1500 ms' });
    expect(exit.exitCode).not.toBe(0);
  });

  it('kills a silent run after its idle timeout, and output keeps a run alive', async () => {
    const silent = await onFakeClock('silent', { hardMs: 60_000, idleMs: 1000 });
    const chatty = await onFakeClock('chatty', { hardMs: 60_000, idleMs: 1000 });
    // Both clocks at 1200 ms, the chatty one printing at 600: its idle timer runs from there.
    silent.clock.advance(1200);
    chatty.clock.advance(600);
    await nextOutput(chatty.proc);
    chatty.clock.advance(600);
    expect(await silent.proc.exited).toMatchObject({
      reason: 'idle_timeout',
      detail: 'no output for 1000 ms',
    });
    await chatty.proc.stop('done', 0);
    expect((await chatty.proc.exited).reason).toBe('stopped');
  });

  it('touch() resets the idle timer of a silent run', async () => {
    const { clock, proc } = await onFakeClock('silent', { hardMs: 60_000, idleMs: 800 });
    // Well over its idle timeout on the run's clock, touched before each 800 ms ran out.
    for (let i = 0; i < 5; i++) {
      clock.advance(700);
      proc.touch();
    }
    // The first stop asked for names the exit: an idle timeout that fired above would be it.
    await proc.stop('done', 0);
    expect((await proc.exited).reason).toBe('stopped');
  });

  it('with deferred timeouts a container waits past them, and they run from beginRun()', async () => {
    const { clock, proc } = await onFakeClock(
      'silent',
      { hardMs: 1000, idleMs: 800 },
      { deferTimeouts: true },
    );
    // Pre-started: silent for longer than both timeouts, and no timeout armed.
    clock.advance(2000);
    expect(clock.live()).toEqual([]);
    proc.beginRun();
    // From beginRun on: the idle timeout (800 ms) comes before the hard one (1000 ms).
    clock.advance(799);
    expect(
      clock
        .live()
        .map((t) => t.ms)
        .sort((x, y) => x - y),
    ).toEqual([800, 1000]);
    clock.advance(1);
    expect(await proc.exited).toMatchObject({ reason: 'idle_timeout', detail: 'no output for 800 ms' });
  });

  it('stop() ends a run with reason stopped and the given detail', async () => {
    const proc = await launchContainer(docker, spec({ env: { PROBE_MODE: 'echo' } }));
    await proc.stop('admin asked', 1000);
    expect(await proc.exited).toMatchObject({ reason: 'stopped', detail: 'admin asked' });
    proc.stdin.write('late line\n'); // dropped, not an EPIPE crash
  });

  it('refuses a spec that would weaken the sandbox or name things badly', async () => {
    await expect(
      launchContainer(
        docker,
        spec({ mounts: [{ hostPath: 'relative/path', containerPath: '/x', readOnly: true }] }),
      ),
    ).rejects.toThrow(/absolute/);
    await expect(
      launchContainer(
        docker,
        spec({ mounts: [{ hostPath: tmp, containerPath: '/workspace/../etc', readOnly: true }] }),
      ),
    ).rejects.toThrow(/\.\./);
    await expect(launchContainer(docker, spec({ env: { 'BAD NAME': 'x' } }))).rejects.toThrow();
    await expect(
      launchContainer(docker, spec({ image: 'carapace-agent-test:does-not-exist' })),
    ).rejects.toThrow(/image carapace-agent-test:does-not-exist or network not found/);
  });

  it('removes orphans of another host instance and keeps its own', async () => {
    const mine = await launchContainer(docker, spec({ env: { PROBE_MODE: 'echo' } }));
    running.push(mine);
    const theirs = await launchContainer(
      docker,
      spec({ env: { PROBE_MODE: 'echo' }, hostInstanceId: `old-host-${testRun}` }),
    );
    const removed = await removeOrphans(docker, {
      exceptHostInstanceId: hostInstanceId,
      onlyWithLabels: { 'carapace.test': testRun },
    });
    expect(removed).toBe(1);
    await theirs.exited;
    await expect(docker.getContainer(theirs.id).inspect()).rejects.toMatchObject({ statusCode: 404 });
    expect((await docker.getContainer(mine.id).inspect()).State.Running).toBe(true);
    await mine.stop('done', 0);
  });
});
