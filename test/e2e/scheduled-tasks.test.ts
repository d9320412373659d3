/**
 * A scheduled task end to end: the agent schedules it with its tool (reviewed by the Cop as a host
 * mutation), the host's timer fires it in the configured time zone, a new run in a real container
 * answers it, and the group gets the reminder.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { reply, type Responder } from '../fakes/fake-provider-script.ts';
import { turnOf } from '../fakes/e2e-responders.ts';
import {
  auditMark,
  auditSince,
  copReviews,
  runTools,
  securityResponder,
} from '../fakes/security-responders.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { eventually, startE2eHost, type E2eHost } from './e2e-harness.ts';

await describeDocker('e2e: scheduled tasks', () => {
  let h: E2eHost;

  beforeAll(async () => {
    h = await startE2eHost({ config: { assistant: { timezone: 'Europe/Berlin' } } });
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  it('fires a task the agent scheduled and delivers its answer to the group', async () => {
    const at = new Date(Date.now() + 6_000).toISOString();
    const schedule = runTools([
      {
        name: 'schedule_task',
        arguments: { prompt: 'remind everyone to water the plants', schedule: { kind: 'once', at } },
      },
    ]);
    // When the task fires, the newest chat message is the scheduler's; the model answers it in words.
    const agent: Responder = (request) => {
      const turn = turnOf(request);
      if (turn.text.startsWith('[scheduled task]')) {
        return reply.text(`Reminder: ${turn.text.replace('[scheduled task] ', '')}`);
      }
      return schedule(request);
    };
    h.fake.setResponder(securityResponder({ main: agent }));
    const mark = auditMark(h);

    const res = await h.send('main', 'remind us about the plants in a few seconds');
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/Scheduled task \w+/);
    expect(
      copReviews(h.fake.requests).some((r) => r.kind === 'host_mutation' && r.operation === 'task.schedule'),
    ).toBe(true);

    const delivered = await eventually(
      'the scheduled reminder',
      () => h.outbox('main').find((row) => row.text === 'Reminder: remind everyone to water the plants'),
      30_000,
    );
    expect(delivered.status).toBe('sent');
    const rows = auditSince(h, mark).map((r) => `${r.operation}:${r.decision}`);
    expect(rows).toEqual(
      expect.arrayContaining(['task.schedule.cop:passed', 'task.schedule:allowed', 'task.fire:fired']),
    );
    const task = h.host.store.tasks.list('main', 10)[0];
    expect(task?.status).toBe('completed');
  }, 90_000);
});
