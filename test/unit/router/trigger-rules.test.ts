import { describe, expect, it } from 'vitest';
import { assistantConfigSchema } from '../../../host/config/schema.ts';
import { shouldTrigger, triggerPattern, type TriggerInput } from '../../../host/router/trigger-rules.ts';

const member = { isAdmin: false };
const admin = { isAdmin: true };
const andy = triggerPattern('Andy');

function says(text: string, flags: Partial<TriggerInput> = {}): TriggerInput {
  return { text, senderId: 'u1', mentionsBot: false, repliesToBot: false, ...flags };
}

describe('shouldTrigger', () => {
  it('triggers on every message in the admin group, addressed or not', () => {
    expect(shouldTrigger(admin, says('what time is it?'), andy)).toBe(true);
    expect(shouldTrigger(admin, says(''), andy)).toBe(true);
  });

  it.each([
    '@Andy',
    '@andy',
    'hey @ANDY!',
    '(@Andy)',
    '@Andy, what now?',
    'ask\n@Andy',
    'ok @Andy.',
    'bonjour @andy?',
    '«@Andy»',
  ])('triggers on %j', (text) => {
    expect(shouldTrigger(member, says(text), andy)).toBe(true);
  });

  it.each([
    '@Andyman',
    'mail@andy.com',
    'Andy',
    'hi andy',
    '@Andy_x',
    '@Andy2',
    '@Andyé',
    'x@Andy',
    '@@Andy',
    '@ Andy',
    '',
  ])('does not trigger on %j', (text) => {
    expect(shouldTrigger(member, says(text), andy)).toBe(false);
  });

  it('triggers on a platform mention or a reply to the bot without the trigger word', () => {
    expect(shouldTrigger(member, says('look at this', { mentionsBot: true }), andy)).toBe(true);
    expect(shouldTrigger(member, says('thanks', { repliesToBot: true }), andy)).toBe(true);
  });

  it('gives the same answer on repeated calls (the pattern keeps no state between tests)', () => {
    for (let i = 0; i < 3; i += 1) {
      expect(shouldTrigger(member, says('hey @Andy'), andy)).toBe(true);
      expect(shouldTrigger(member, says('hey Andy'), andy)).toBe(false);
    }
  });
});

describe('triggerPattern', () => {
  it('accepts every name the config schema accepts, including "-" and "_"', () => {
    for (const name of ['Dr-Who', 'R2_D2', 'a', 'x-y-z', `A${'b'.repeat(31)}`]) {
      expect(assistantConfigSchema.parse({ name }).name).toBe(name);
      const p = triggerPattern(name);
      expect(shouldTrigger(member, says(`hello @${name.toLowerCase()}!`), p)).toBe(true);
      expect(shouldTrigger(member, says(`hello @${name}more`), p)).toBe(false);
    }
  });

  it('matches a name with "-" literally', () => {
    const p = triggerPattern('Dr-Who');
    expect(shouldTrigger(member, says('@dr-who help'), p)).toBe(true);
    expect(shouldTrigger(member, says('@Dr-Whoever'), p)).toBe(false);
    expect(shouldTrigger(member, says('@DrWho'), p)).toBe(false);
    expect(shouldTrigger(member, says('@Dr'), p)).toBe(false);
  });

  it('treats regex metacharacters in a name literally', () => {
    const p = triggerPattern('A.b+');
    expect(p.test('@A.b+ hi')).toBe(true);
    expect(p.test('@Axb hi')).toBe(false);
    expect(p.test('@A.bbb hi')).toBe(false);
  });
});

describe('names continued by a hyphen', () => {
  it('does not trigger on a longer hyphenated name, but does on a dash after the name', () => {
    const p = triggerPattern('Andy');
    const t = (text: string) => shouldTrigger({ isAdmin: false }, says(text), p);
    expect(t('@Andy-bot do this')).toBe(false);
    expect(t('@Andy - do this')).toBe(true);
    expect(t('thanks @Andy-')).toBe(true);
  });
});

describe('per-group trigger settings', () => {
  it('"always" triggers on every message, "mention" only on an address', () => {
    expect(shouldTrigger(member, says('good morning'), andy, { trigger: 'always' })).toBe(true);
    expect(shouldTrigger(member, says('good morning'), andy, { trigger: 'mention' })).toBe(false);
    expect(shouldTrigger(member, says('@Andy good morning'), andy, { trigger: 'mention' })).toBe(true);
  });

  it('"owner" lets only the attested owner trigger, and only by addressing the bot', () => {
    const owner = { trigger: 'owner' } as const;
    expect(shouldTrigger(member, says('@Andy hi'), andy, owner)).toBe(false);
    expect(
      shouldTrigger(
        member,
        says('@Andy hi', { senderId: 'owner', senderName: 'owner' } as never),
        andy,
        owner,
      ),
    ).toBe(false);
    expect(shouldTrigger(member, says('@Andy hi', { senderIsOwner: true }), andy, owner)).toBe(true);
    expect(shouldTrigger(member, says('just chatting', { senderIsOwner: true }), andy, owner)).toBe(false);
  });

  it('allowed_senders keeps everyone else as context, whatever the mode', () => {
    const only = { trigger: 'always', allowedSenders: ['alice'] } as const;
    expect(shouldTrigger(member, says('hi', { senderId: 'alice' }), andy, only)).toBe(true);
    expect(
      shouldTrigger(member, says('@Andy hi', { senderId: 'mallory', mentionsBot: true }), andy, only),
    ).toBe(false);
    // The admin group is the owner's own conversation: its settings never apply.
    expect(shouldTrigger(admin, says('hi', { senderId: 'mallory' }), andy, only)).toBe(true);
  });
});
