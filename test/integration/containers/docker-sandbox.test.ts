import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchContainer } from '../../../host/containers/run/container-launch.ts';
import { removeOrphans } from '../../../host/containers/run/container-orphans.ts';
import { ensureProbeImage } from '../../fixtures/agent-entries/probe-image.ts';
import { describeDocker } from '../../helpers/docker-available.ts';
import { containerSpecs } from '../../helpers/container-specs.ts';
import { collect, firstLine } from '../../helpers/stream-text.ts';

const docker = new Docker();
const testRun = randomUUID().slice(0, 8);
let image = '';
let tmp = '';

const spec = containerSpecs({ groupId: 'sandbox', testRun, image: () => image });

await describeDocker('docker sandbox limits', () => {
  beforeAll(async () => {
    image = await ensureProbeImage(docker);
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-'));
  }, 15 * 60_000);

  afterAll(async () => {
    await removeOrphans(docker, {
      exceptHostInstanceId: 'none',
      onlyWithLabels: { 'carapace.test': testRun },
    });
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('a fork bomb stops at the PID limit; the engine and the host stay fine', async () => {
    const pids = 48;
    const proc = await launchContainer(
      docker,
      spec({ env: { PROBE_MODE: 'forkbomb' }, limits: { memoryMb: 256, cpus: 1, pids } }),
    );
    expect(await firstLine(proc.stdout)).toBe('bombed');
    const container = docker.getContainer(proc.id);
    // Watch the container's PID count until the bomb has hit the ceiling (bounded by count, not time).
    let peak = 0;
    for (let i = 0; i < 40 && peak < pids; i++) {
      const stats = (await container.stats({ stream: false, 'one-shot': true } as { stream: false })) as {
        pids_stats?: { current?: number; limit?: number };
      };
      peak = Math.max(peak, stats.pids_stats?.current ?? 0);
      expect(stats.pids_stats?.limit).toBe(pids);
    }
    expect(peak).toBeGreaterThan(pids / 2);
    expect(peak).toBeLessThanOrEqual(pids);
    // The engine still answers and can still run other containers.
    await docker.ping();
    const other = await launchContainer(docker, spec({ env: { PROBE_MODE: 'exit' } }));
    expect(await other.exited).toEqual({ exitCode: 0, reason: 'exited' });
    await proc.stop('bomb contained', 200);
    expect((await proc.exited).reason).toBe('stopped');
  });

  it('writes only to /tmp and read-write mounts; /tmp is noexec; runs as uid 10001', async () => {
    const rw = fs.mkdtempSync(path.join(tmp, 'rw-'));
    const ro = fs.mkdtempSync(path.join(tmp, 'ro-'));
    fs.chmodSync(rw, 0o777);
    const targets = [
      '/tmp/ok',
      '/workspace/group/ok',
      '/workspace/extra/ro/nope',
      '/workspace/nope',
      '/app/agent.cjs',
      '/etc/passwd',
      '/home/agent/nope',
      '/root/nope',
      '/nope',
      '/usr/local/bin/node',
    ];
    const proc = await launchContainer(
      docker,
      spec({
        env: { PROBE_MODE: 'writes', PROBE_PATHS: targets.join(',') },
        mounts: [
          { hostPath: rw, containerPath: '/workspace/group', readOnly: false },
          { hostPath: ro, containerPath: '/workspace/extra/ro', readOnly: true },
        ],
      }),
    );
    const output = collect(proc.stdout);
    expect((await proc.exited).exitCode).toBe(0);
    const report = JSON.parse((await output).trim()) as {
      results: Record<string, string>;
      exec: string;
      uid: number;
    };
    expect(report.uid).toBe(10001);
    expect(report.results['/tmp/ok']).toBe('ok');
    expect(report.results['/workspace/group/ok']).toBe('ok');
    expect(fs.readFileSync(path.join(rw, 'ok'), 'utf8')).toBe('probe');
    for (const target of targets.slice(2)) {
      expect([target, report.results[target]]).toEqual([
        target,
        expect.stringMatching(/^(EROFS|EACCES|EPERM)$/),
      ]);
    }
    expect(fs.readdirSync(ro)).toEqual([]);
    // Written to /tmp, but not executable from there.
    expect(report.exec).toBe('EACCES');
  });

  it('keeps no privilege: no capabilities, no setuid escalation', async () => {
    const proc = await launchContainer(
      docker,
      spec({
        env: {
          PROBE_MODE: 'bash',
          PROBE_SCRIPT: 'grep -E "^(CapEff|CapBnd|NoNewPrivs)" /proc/self/status; id -u; id -g',
        },
      }),
    );
    const output = collect(proc.stdout);
    expect((await proc.exited).exitCode).toBe(0);
    const text = await output;
    expect(text).toMatch(/CapEff:\s+0000000000000000/);
    expect(text).toMatch(/CapBnd:\s+0000000000000000/);
    expect(text).toMatch(/NoNewPrivs:\s+1/);
    expect(text).toMatch(/^10001\n10001$/m);
  });

  it('a run that exceeds its memory limit is reported as oom', async () => {
    const proc = await launchContainer(
      docker,
      spec({
        env: { PROBE_MODE: 'hog' },
        limits: { memoryMb: 64, cpus: 1, pids: 64 },
      }),
    );
    const exit = await proc.exited;
    expect(exit.reason).toBe('oom');
    expect(exit.exitCode).toBe(137);
  });
});
