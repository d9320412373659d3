import { describe, expect, it } from 'vitest';
import { reloadWhenRunning } from '../../../host/config/config-reload.ts';
import type { ReloadOutcome, ReloadTrigger } from '../../../host/config/config-reloader.ts';
import { safeModeNotice } from '../../../host/config/safe-start.ts';

describe('reloadWhenRunning', () => {
  it('answers "still starting" until the reloader exists, then reloads with its own trigger', async () => {
    const triggers: ReloadTrigger[] = [];
    const held: { reloader?: { reload(t: ReloadTrigger): Promise<ReloadOutcome> } } = {};
    const proposal = reloadWhenRunning(() => held.reloader, 'proposal');
    const web = reloadWhenRunning(() => held.reloader, 'web');

    expect(await proposal()).toEqual({
      ok: false,
      detail: 'the host is still starting; the file is read again once it runs',
    });
    expect(await web()).toEqual({
      ok: false,
      detail: 'the host is still starting; it reads the file once it runs',
    });

    held.reloader = {
      reload: async (t) => {
        triggers.push(t);
        return t === 'web'
          ? { kind: 'refused', hash: 'h', problems: ['[web] listen is not host:port'] }
          : { kind: 'unchanged', hash: 'h' };
      },
    };
    expect(await proposal()).toEqual({ ok: true, detail: 'the running host already runs this version' });
    const refused = await web();
    expect(refused.ok).toBe(false);
    expect(refused.detail).toContain('[web] listen is not host:port');
    expect(triggers).toEqual(['proposal', 'web']);
  });
});

describe('safeModeNotice', () => {
  it('names the broken file, the copy it runs on, each problem and the way out', () => {
    const text = safeModeNotice(
      '/cfg/config.toml',
      { lastGoodFile: '/cfg/last-good.toml', savedAt: '2026-01-02T03:04:05.000Z' },
      ['[runs] max_concurrent: must be at least 1', 'unknown key [foo]'],
    );
    expect(text).toBe(
      'SAFE MODE: /cfg/config.toml is not valid, so the host started on the last good configuration ' +
        '(/cfg/last-good.toml, saved 2026-01-02T03:04:05.000Z). 2 problem(s):\n' +
        '- [runs] max_concurrent: must be at least 1\n- unknown key [foo]\n' +
        'Repair the file (by hand, carapace config set or rollback): the running host picks it up.',
    );
  });
});
