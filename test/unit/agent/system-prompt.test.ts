import { describe, expect, it } from 'vitest';
import {
  buildSystemPrompt,
  type SystemPromptInput,
} from '../../../container-agent/src/prompt/system-prompt.ts';
import { zonedTime } from '../../../container-agent/src/prompt/zoned-time.ts';

const input: SystemPromptInput = {
  assistantName: 'Andy',
  group: { id: 'clients', name: 'Clients', isAdmin: false, channel: 'telegram.work' },
  timezone: 'UTC',
  formatting: 'Use plain text.',
  now: new Date('2026-11-29T10:00:00Z'),
  workspaceRoot: '/workspace',
  memory: null,
};

describe("the agent's system prompt", () => {
  it('carries the persona after the rules, as how to present itself and not as a rule over them', () => {
    const prompt = buildSystemPrompt({ ...input, persona: 'Formal; answers in English.' });
    const persona = prompt.indexOf('## Persona');
    expect(persona).toBeGreaterThan(prompt.indexOf('## Tools'));
    expect(prompt.slice(persona)).toContain('the rules above still hold):\nFormal; answers in English.');
  });

  it('has no persona section when the group has none', () => {
    expect(buildSystemPrompt(input)).not.toContain('## Persona');
    expect(buildSystemPrompt({ ...input, persona: '  ' })).not.toContain('## Persona');
  });
});

describe('zoned time', () => {
  it("shows the group's local time and offset, and UTC for a zone that does not exist", () => {
    const at = new Date('2026-01-15T10:00:05Z');
    expect(zonedTime(at, 'Europe/Berlin')).toEqual({
      local: '2026-01-15 11:00:05',
      weekday: 'Thursday',
      offset: '+01:00',
      zone: 'Europe/Berlin',
    });
    expect(zonedTime(at, 'Mars/Olympus_Mons')).toEqual({
      local: '2026-01-15 10:00:05',
      weekday: 'Thursday',
      offset: '+00:00',
      zone: 'UTC',
    });
  });
});
