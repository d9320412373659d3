import { describe, expect, it } from 'vitest';
import { createLogFormatter } from '../../../host/cli/commands/logs-format.ts';

// 2026-11-28T13:38:19.286Z
const TIME = Date.UTC(2026, 10, 28, 13, 38, 19, 286);

function line(fields: Record<string, unknown>): string {
  return JSON.stringify({ level: 30, time: TIME, pid: 4242, hostname: 'vm', ...fields });
}

describe('the log formatter', () => {
  it('shows the time in the given zone, the level, the message and the details, without pid and hostname', () => {
    const tokyo = createLogFormatter({ timeZone: 'Asia/Tokyo' });
    expect(tokyo(line({ channel: 'local', msg: 'channel status' }))).toBe(
      '2026-11-28 22:38:19.286 INFO  channel status channel=local',
    );
    const utc = createLogFormatter({ timeZone: 'UTC' });
    expect(utc(line({ level: 40, msg: 'slow' }))).toBe('2026-11-28 13:38:19.286 WARN  slow');
  });

  it('quotes what a reader could split wrongly and writes objects as JSON', () => {
    const format = createLogFormatter({ timeZone: 'UTC' });
    expect(
      format(line({ msg: 'run done', group: 'main', note: 'two words', status: { state: 'ok' }, n: 3 })),
    ).toBe('2026-11-28 13:38:19.286 INFO  run done group=main note="two words" status={"state":"ok"} n=3');
  });

  it("shows an error's message as err= and its stack indented below", () => {
    const format = createLogFormatter({ timeZone: 'UTC' });
    const err = {
      type: 'Error',
      message: 'ENOENT: no such file',
      stack: 'Error: ENOENT: no such file\n    at watch (fs:1:1)',
    };
    expect(format(line({ level: 50, err, step: 'watching', msg: 'could not start' }))).toBe(
      '2026-11-28 13:38:19.286 ERROR could not start err="ENOENT: no such file" step=watching\n    at watch (fs:1:1)',
    );
  });

  it('returns a line that is not a host log line as it is', () => {
    const format = createLogFormatter({ timeZone: 'UTC' });
    for (const raw of ['plain text from a crash', '{"torn":', '{"level":"info"}', '[1,2]', '']) {
      expect(format(raw)).toBe(raw);
    }
  });
});
