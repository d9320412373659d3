import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  LIMITS,
  MAX_FRAME_BYTES,
  RPC_ERROR_CODES,
  agentMethods,
  channelSchema,
  hostMethods,
  runStartParamsSchema,
  taskScheduleParamsSchema,
  taskUpdateParamsSchema,
} from '../../../container-agent/src/protocol.ts';

const message = {
  id: 1,
  sender: '49123',
  senderName: 'Ann',
  text: 'hi',
  timestamp: '2025-03-01T10:00:00.000Z',
  fromAssistant: false,
};
const runStart = {
  runId: 7,
  group: { id: 'family', name: 'Family', isAdmin: false, channel: 'telegram' },
  assistantName: 'Andy',
  timezone: 'Europe/Berlin',
  formatting: 'Use *bold* sparingly.',
  messages: [message],
  limits: { maxToolSteps: 20, maxOutputTokens: 4096, wallTimeMs: 300_000 },
  gatewayKey: 'gw-protocol-test',
};

describe('protocol', () => {
  it('fixes the frame limit and error codes', () => {
    expect(MAX_FRAME_BYTES).toBe(1024 * 1024);
    expect(RPC_ERROR_CODES).toEqual({
      parseError: -32700,
      invalidRequest: -32600,
      methodNotFound: -32601,
      invalidParams: -32602,
      internal: -32603,
      forbidden: -32001,
      denied: -32002,
      frameTooLarge: -32003,
      runNotActive: -32004,
    });
  });

  it('lists every method of the design in the two tables', () => {
    expect(Object.keys(agentMethods).sort()).toEqual(['run.input', 'run.start', 'run.stop']);
    expect(Object.keys(hostMethods).sort()).toEqual([
      'bash.ran',
      'config.propose',
      'config.read',
      'document.text',
      'file.read',
      'group.list',
      'group.register',
      'memory.forget',
      'memory.remember',
      'memory.search',
      'message.send',
      'run.done',
      'run.draft',
      'security.bash_check',
      'service.call',
      'task.cancel',
      'task.list',
      'task.pause',
      'task.resume',
      'task.schedule',
      'task.update',
    ]);
    expect(agentMethods['run.stop'].notification).toBe(true);
    expect(hostMethods['bash.ran'].notification).toBe(true);
    expect(hostMethods['file.read'].notification).toBe(true);
    expect(hostMethods['run.draft'].notification).toBe(true);
  });

  it("takes a named account's channel label for a run's group, and nothing that is not one", () => {
    for (const channel of ['telegram', 'telegram.work', 'whatsapp.home-2', 'local'])
      expect(
        runStartParamsSchema.safeParse({ ...runStart, group: { ...runStart.group, channel } }).success,
        channel,
      ).toBe(true);
    for (const channel of [
      'Telegram',
      'telegram.',
      '.work',
      'telegram.work.x',
      'telegram/../x',
      'telegram.Work',
      '',
    ])
      expect(channelSchema.safeParse(channel).success, channel).toBe(false);
  });

  it('bounds a draft and takes nothing but its text', () => {
    const draft = hostMethods['run.draft'].params;
    expect(draft.safeParse({ text: 'x'.repeat(LIMITS.draftText) }).success).toBe(true);
    expect(draft.safeParse({ text: 'x'.repeat(LIMITS.draftText + 1) }).success).toBe(false);
    expect(draft.safeParse({ text: 'hi', to: 'other-group' }).success).toBe(false);
    expect(draft.safeParse({ text: 42 }).success).toBe(false);
  });

  it('never lets a container claim authority in its params', () => {
    const forbidden = /admin|approv|review|bypass|trusted|allow|taint|runid|caller|identity/i;
    for (const [method, spec] of Object.entries(hostMethods)) {
      const keys = JSON.stringify(z.toJSONSchema(spec.params, { unrepresentable: 'any' }));
      for (const key of keys.match(/"([A-Za-z_]+)":/g) ?? []) {
        if (['"properties":', '"required":', '"type":', '"additionalProperties":'].includes(key)) continue;
        expect(`${method} ${key}`).not.toMatch(forbidden);
      }
    }
  });

  it('accepts a well-formed run.start and rejects extra or out-of-bounds fields', () => {
    expect(runStartParamsSchema.safeParse(runStart).success).toBe(true);
    expect(runStartParamsSchema.safeParse({ ...runStart, approved: true }).success).toBe(false);
    expect(
      runStartParamsSchema.safeParse({ ...runStart, group: { ...runStart.group, id: '../etc' } }).success,
    ).toBe(false);
    expect(
      runStartParamsSchema.safeParse({
        ...runStart,
        messages: [{ ...message, text: 'x'.repeat(LIMITS.chatText + 1) }],
      }).success,
    ).toBe(false);
    expect(
      runStartParamsSchema.safeParse({
        ...runStart,
        messages: [{ ...message, timestamp: '2025-03-01 10:00' }],
      }).success,
    ).toBe(false);
  });

  it('requires schedules with explicit offsets and sane intervals', () => {
    const base = { prompt: 'water the plants' };
    expect(
      taskScheduleParamsSchema.safeParse({ ...base, schedule: { kind: 'cron', expr: '0 9 * * *' } }).success,
    ).toBe(true);
    expect(
      taskScheduleParamsSchema.safeParse({
        ...base,
        schedule: { kind: 'once', at: '2025-06-01T09:00:00+02:00' },
      }).success,
    ).toBe(true);
    expect(
      taskScheduleParamsSchema.safeParse({ ...base, schedule: { kind: 'once', at: '2025-06-01T09:00:00' } })
        .success,
    ).toBe(false);
    expect(
      taskScheduleParamsSchema.safeParse({ ...base, schedule: { kind: 'interval', everyMs: 1000 } }).success,
    ).toBe(false);
    expect(taskUpdateParamsSchema.safeParse({ taskId: 't1' }).success).toBe(false);
    expect(taskUpdateParamsSchema.safeParse({ taskId: 't1', prompt: 'new' }).success).toBe(true);
  });
});
