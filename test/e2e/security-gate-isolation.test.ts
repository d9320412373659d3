/**
 * The bash gate without silent misses (issue 12), through real containers. The classes found in review
 * escalate; and where a command still runs (the host allows escalated commands in an untainted run), it
 * cannot reach the agent's key, its IPC stream or the network: commands run under their own uid, apart
 * from the agent and PID 1 (security-principals.test.ts proves the separation), and the admin group is on
 * the gateway network. Every command a run executes leaves a `bash.ran` audit row. A container that floods its IPC
 * stream costs the host a bounded number of audit rows, is stopped, and does not slow another group.
 */
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeDocker } from '../helpers/docker-available.ts';
import {
  auditMark,
  auditSince,
  bash,
  detailsOf,
  resultsOf,
  runTools,
  securityResponder,
} from '../fakes/security-responders.ts';
import { reply } from '../fakes/fake-provider-script.ts';
import { folderUsage } from '../../host/containers/mounts/disk-quota.ts';
import { startE2eHost, type E2eHost, type E2eHostOptions } from './e2e-harness.ts';

const tag = () => crypto.randomBytes(4).toString('hex');
const sum = (sizes: number[]) => sizes.reduce((a, b) => a + b, 0);
const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
/**
 * What DESIGN.md states writers that make file after file can write before the host kills their run (see
 * "Disk quotas"): a time bound (one inotify delivery, one lstat, one Docker kill), held here as a size with
 * room for a loaded CI machine, where a kill came 13.2 MB in; unchecked they would write 4 GB.
 */
const FILE_AFTER_FILE_BOUND = 32 * 1024 * 1024;

await describeDocker('e2e security: commands cannot reach the agent, whatever the gate says', () => {
  let h: E2eHost;

  /** Audit rows of the newest run of `group` written after `mark`. */
  const rowsOf = (group: string, mark: number) => {
    const runId = h.runs(group).at(-1)?.id;
    return auditSince(h, mark).filter((r) => r.runId === runId);
  };
  /** What the admin chat was told about `group`'s unanswered messages, newest last. */
  const ownerToldOf = (group: string) =>
    h
      .outbox('main')
      .filter((r) => r.text.startsWith(`Group ${group} got no answer`))
      .map((r) => r.text)
      .join('\n');

  beforeAll(async () => {
    const config = {
      runs: { max_attempts: 1, max_concurrent: 3 },
      containers: { group_quota_mb: 5, disk_check_ms: 300 },
    } as unknown as E2eHostOptions['config'];
    h = await startE2eHost({ config });
    await h.addLocalGroups('alpha', 'beta', 'gamma', 'delta');
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  it('commands the host lets run find /proc/1 and the agent process closed: no key, no environment, no memory, no IPC stream', async () => {
    const injected = `INJECTED-${tag()}`;
    const frame = JSON.stringify({ jsonrpc: '2.0', method: 'message.send', params: { text: injected } });
    const commands = [
      'cat /proc/1/environ; echo "rc=$?"',
      'cat /proc/$PPID/environ; echo "rc=$?"',
      'head -c 64 /proc/$PPID/mem; echo "rc=$?"',
      'ls /proc/$PPID/fd /proc/1/fd; echo "rc=$?"',
      `echo '${frame}' > /proc/1/fd/1; echo "rc=$?"`,
      `echo '${frame}' > /proc/$PPID/fd/1; echo "rc=$?"`,
    ];
    h.fake.setResponder(securityResponder({ main: runTools(commands.map(bash)) }));
    const mark = auditMark(h);
    const res = await h.send('main', 'look around');
    expect(res.code).toBe(0);
    const results = resultsOf(res.stdout);
    expect(results).toHaveLength(commands.length);
    for (const result of results) {
      expect(result).toMatch(/Permission denied/);
      expect(result).toMatch(/rc=[1-9]/);
      expect(result).not.toMatch(/gw-[A-Za-z0-9_-]{20,}/);
    }
    // No frame reached the host's stream: nothing was sent with the injected text.
    expect(h.outbox('main').some((r) => r.text.includes(injected))).toBe(false);
    // Each command was escalated (the host decided it), and each one that ran was reported and audited.
    const rows = rowsOf('main', mark);
    const decided = rows.filter((r) => r.operation === 'bash').map((r) => detailsOf(r).command);
    const ran = rows.filter((r) => r.operation === 'bash.ran').map((r) => detailsOf(r).command);
    expect(decided).toEqual(commands);
    expect(ran).toEqual(commands);
    expect(rows.filter((r) => r.operation === 'bash.gate_miss')).toEqual([]);
  }, 240_000);

  it('each class found in review escalates, and what still runs reaches neither /proc nor the network', async () => {
    const t = tag();
    const local = `printf 'one\\n' > notes-${t}.txt`;
    const escalated = [
      // sed: a label ends at a blank; `e` after it runs a program.
      `sed ':a e cat /proc/1/environ' notes-${t}.txt; echo "rc=$?"`,
      // ~sys is /dev on Debian: a TCP socket opened by bash itself (the host's firewall refuses it).
      'echo x > ~sys/tcp/host.docker.internal/9; echo "rc=$?"',
      // /proc spelled as a glob.
      'cat /pro[c]/1/environ; echo "rc=$?"',
      // $PWD is wherever an earlier cd went; outside addresses are not routed from the gateway network.
      'cd /dev && echo x > "$PWD/tcp/1.1.1.1/80"; echo "rc=$?"',
    ];
    h.fake.setResponder(
      securityResponder({
        main: runTools(
          [local, ...escalated].map((command) => ({
            name: 'bash',
            arguments: { command, timeout_seconds: 5 },
          })),
        ),
      }),
    );
    const mark = auditMark(h);
    const res = await h.send('main', 'try the classes');
    expect(res.code).toBe(0);
    const [first, ...rest] = resultsOf(res.stdout);
    expect(first).toBe('exit code 0');
    for (const result of rest) {
      // sed's `e` failing does not fail sed: the denial shows on stderr.
      expect(result).toMatch(/rc=[1-9]|Permission denied|killed: time limit reached/);
      expect(result).not.toMatch(/gw-[A-Za-z0-9_-]{20,}/);
    }
    const rows = rowsOf('main', mark);
    expect(
      rows.filter((r) => r.operation === 'bash').map((r) => [detailsOf(r).command, detailsOf(r).class]),
    ).toEqual(escalated.map((c) => [c, 'escalate']));
    // One bash.ran row for every command the run executed, the local one included.
    expect(rows.filter((r) => r.operation === 'bash.ran').map((r) => detailsOf(r).command)).toEqual([
      local,
      ...escalated,
    ]);
    expect(rows.find((r) => detailsOf(r).command === local)).toMatchObject({
      decision: 'ran',
      reason: 'local',
    });
  }, 240_000);

  const asRoot = process.getuid?.() === 0;
  (asRoot ? it : it.skip)(
    `a container flooding its IPC stream with 300,000 junk lines: a bounded number of audit rows, the run is stopped, another group is still answered${asRoot ? '' : " (skipped: writing into a container's stdout from outside needs root)"}`,
    async () => {
      h.fake.setResponder(
        securityResponder({
          alpha: runTools([bash('sleep 60')]),
          beta: () => reply.text('pong'),
        }),
      );
      const pingBeta = async () => {
        const started = performance.now();
        const r = await h.send('beta', '@Andy ping');
        expect(r.stdout).toContain('pong');
        return performance.now() - started;
      };
      const idle = [await pingBeta(), await pingBeta()].sort((a, b) => a - b)[0] as number;

      const mark = auditMark(h);
      const alpha = h.send('alpha', '@Andy wait a while');
      const container = await h.runningContainer('alpha', 150_000);
      // A compromised agent, simulated from outside: the host's root writes into the container's stdout
      // through PID 1's descriptor (inside the container even root cannot: see the first test).
      const pid = container.State.Pid;
      const flood = spawn('sh', ['-c', `yes '{not json' | head -n 300000 > /proc/${pid}/fd/1`], {
        stdio: 'ignore',
      });
      const flooded = new Promise<number | null>((resolve) => flood.on('exit', resolve));
      const during = await pingBeta();
      const res = await alpha;
      await flooded;
      // The group gets a neutral apology; why the run was stopped is for the owner, in the admin chat.
      expect(res.stdout).toContain('Sorry, I cannot answer right now.');
      expect(res.stdout).not.toMatch(/malformed or unexpected frames/);
      expect(ownerToldOf('alpha')).toMatch(/malformed or unexpected frames/);
      const rows = rowsOf('alpha', mark);
      expect(rows.filter((r) => r.operation === 'ipc.frame').length).toBeLessThanOrEqual(12);
      expect(rows.length).toBeLessThan(30);
      expect(h.runs('alpha').at(-1)?.exitReason ?? '').toMatch(/malformed or unexpected frames/);
      // How much the flood slows another group is a figure, not an assertion (timed assertions fail on a
      // loaded machine): printed here for the CI log.
      process.stdout.write(
        `beta's reply: ${Math.round(idle)} ms idle, ${Math.round(during)} ms during the flood\n`,
      );
    },
    300_000,
  );

  it('a group over its disk quota is stopped before the host disk holds more than the quota, and the next run stops at once', async () => {
    const quota = 5 * 1024 * 1024;
    h.fake.setResponder(
      securityResponder({ gamma: runTools([bash('yes junk > junk.txt; echo "rc=$?"'), bash('sleep 20')]) }),
    );
    const res = await h.send('gamma', '@Andy fill the disk');
    expect(res.stdout).toContain('Sorry, I cannot answer right now.');
    expect(ownerToldOf('gamma')).toMatch(
      /disk quota: the group folder \S+ holds [0-9.]+ MB, over its quota of 5 MB \(\[containers\] group_quota_mb\)/,
    );
    expect(h.runs('gamma').at(-1)?.exitReason ?? '').toMatch(/disk quota/);
    const groupDir = path.join(h.paths.groupsDir, 'gamma');
    // The file stopped at the quota (RLIMIT_FSIZE); the folder holds little more than that.
    expect(fs.statSync(path.join(groupDir, 'junk.txt')).size).toBeLessThanOrEqual(quota);
    expect((await folderUsage(groupDir)).bytes).toBeLessThan(quota + 512 * 1024);

    h.fake.setResponder(securityResponder({ gamma: runTools([bash('yes more > more.txt')]) }));
    const again = await h.send('gamma', '@Andy fill it more');
    expect(again.stdout).toContain('Sorry, I cannot answer right now.');
    expect(h.runs('gamma').at(-1)?.exitReason ?? '').toMatch(/disk quota/);
    expect((await folderUsage(groupDir)).bytes).toBeLessThan(quota + 512 * 1024);
  }, 240_000);

  it('several parallel writers, some making file after file, are killed within the stated bound over the quota', async () => {
    const quota = 5 * 1024 * 1024;
    // Four endless writers to one file each (RLIMIT_FSIZE stops each at 5 MB, 20 MB together) and four
    // that write 1 MB file after file (no file limit bounds them): only the host's reaction does.
    const writers =
      'for i in 1 2 3 4; do yes "junk $i" > "yes-$i.txt" & done; ' +
      'for i in 1 2 3 4; do (for j in $(seq 1000); do head -c 1048576 /dev/zero > "w$i-$j.bin"; done) & done; ' +
      'wait; echo "rc=$?"';
    h.fake.setResponder(securityResponder({ delta: runTools([bash(writers), bash('sleep 20')]) }));
    const res = await h.send('delta', '@Andy fill the disk in parallel');
    expect(res.stdout).toContain('Sorry, I cannot answer right now.');
    expect(h.runs('delta').at(-1)?.exitReason ?? '').toMatch(/disk quota/);
    const dir = path.join(h.paths.groupsDir, 'delta');
    const sizeOf = (pattern: RegExp) =>
      fs
        .readdirSync(dir)
        .filter((name) => pattern.test(name))
        .map((name) => fs.statSync(path.join(dir, name)).size);
    // The endless writers are bounded by RLIMIT_FSIZE whatever the load: no file past the quota.
    const endless = sizeOf(/^yes-\d\.txt$/);
    for (const size of endless) expect(size).toBeLessThanOrEqual(quota);
    // The writers making file after file are bounded only by how soon the host kills the run.
    const fileAfterFile = sum(sizeOf(/^w\d-\d+\.bin$/));
    const used = (await folderUsage(dir)).bytes;
    process.stdout.write(
      `parallel writers: the folder holds ${mb(used)} MB for a 5 MB quota (endless writers ${mb(sum(endless))} MB, ` +
        `file after file ${mb(fileAfterFile)} MB); ${ownerToldOf('delta')}\n`,
    );
    expect(fileAfterFile).toBeLessThanOrEqual(FILE_AFTER_FILE_BOUND);
    expect(used).toBeLessThanOrEqual(4 * quota + FILE_AFTER_FILE_BOUND + 1024 * 1024);
  }, 240_000);
});
