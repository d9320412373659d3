/**
 * Config changes reach the running host without a restart, end to end: `carapace config set` (through the
 * socket) and hand edits of config.toml (through the file watch) against a real host whose runs are real
 * containers; an invalid edit is refused while the host runs on; a host started on an invalid file runs in
 * safe mode on the last good configuration.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { reply } from '../fakes/fake-provider.ts';
import { turnResponder } from '../fakes/e2e-responders.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { eventually, startE2eHost, type E2eHost } from './e2e-harness.ts';

const sayWhatYouHeard = turnResponder((t) => reply.text(`[${t.group}] heard: ${t.text}`));

await describeDocker('e2e: config reload without a restart', () => {
  let h: E2eHost;

  beforeAll(async () => {
    h = await startE2eHost({ responder: sayWhatYouHeard });
    await h.addLocalGroups('alpha');
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  const adminNotices = () => h.outbox('main').map((r) => r.text);

  it('after config set assistant.name "Max", @Max triggers in a group and @Andy no longer does', async () => {
    const andy = await h.send('alpha', '@Andy are you there?');
    expect(andy.stdout).toBe('[alpha] heard: @Andy are you there?\n');

    const set = await h.cli(['config', 'set', 'assistant.name', '"Max"']);
    expect(set.stdout).toContain('assistant.name: "Andy" → "Max"');
    // The CLI's reload through the socket, or the file watch just before it: either way the host took it.
    expect(set.stdout).toMatch(/applied to the running host, no restart needed|already runs this version/);
    expect(set.code).toBe(0);
    expect(adminNotices().some((t) => t.includes('assistant.name: "Andy" → "Max"'))).toBe(true);

    const max = await h.send('alpha', '@Max now you are Max');
    expect(max.stdout).toBe('[alpha] heard: @Max now you are Max\n');
    expect(max.code).toBe(0);
    const runsBefore = h.runs('alpha').length;
    const old = await h.send('alpha', '@Andy still there?');
    expect(old.stdout).toBe('');
    expect(old.stderr).toMatch(/mention @Max/);
    expect(h.runs('alpha')).toHaveLength(runsBefore);
  }, 180_000);

  it('applies a valid hand edit of config.toml, and refuses an invalid one while the host runs on', async () => {
    const good = fs.readFileSync(h.paths.configFile, 'utf8').replace('name = "Max"', 'name = "Nova"');
    fs.writeFileSync(h.paths.configFile, good);
    await eventually('the hand edit to be applied', () =>
      adminNotices().some((t) => t.includes('assistant.name: "Max" → "Nova"')),
    );
    const nova = await h.send('alpha', '@Nova hello');
    expect(nova.stdout).toBe('[alpha] heard: @Nova hello\n');

    fs.writeFileSync(h.paths.configFile, good.replace('name = "Nova"', 'name = "two words"\nnickname = "N"'));
    const refusal = await eventually('the invalid edit to be refused', () =>
      adminNotices().find((t) => t.includes('is not valid, so it was not applied')),
    );
    const problems = refusal.split('\n').filter((l) => l.startsWith('- '));
    expect(problems).toHaveLength(2);
    expect(problems.join('\n')).toMatch(/assistant\.name: must be one word/);
    expect(problems.join('\n')).toMatch(/unknown key "nickname"/);
    expect(h.logEntries('config change refused')).toHaveLength(1);
    // The host runs on the configuration it had.
    const still = await h.send('alpha', '@Nova are you still running?');
    expect(still.stdout).toBe('[alpha] heard: @Nova are you still running?\n');
  }, 180_000);

  it('starts on an invalid file in safe mode, on the last good configuration, and says so', async () => {
    // The file is still the invalid edit of the test above; Nova ran and passed its checks: the last good one.
    await h.restart();
    const notice = await eventually('the safe-mode notice', () =>
      adminNotices().find((t) => t.startsWith('SAFE MODE:')),
    );
    expect(notice).toMatch(/assistant\.name: must be one word/);
    expect(notice).toContain('last-good.toml');
    const nova = await h.send('alpha', '@Nova after the restart');
    expect(nova.stdout).toBe('[alpha] heard: @Nova after the restart\n');
    const doctor = await h.cli(['doctor']);
    expect(doctor.stdout).toMatch(/assistant\.name: must be one word/);
    expect(doctor.stdout).toMatch(/safe mode on the last good configuration/);

    // Repairing the file from the terminal takes the host out of safe mode without a restart.
    const rollback = await h.cli(['config', 'rollback']);
    expect(rollback.code).toBe(0);
    expect(rollback.stdout).toMatch(/applied to the running host|already runs this version/);
  }, 240_000);
});
