import { describe, expect, it } from 'vitest';
import { createChannelNotices } from '../../../host/admin/channel-notices.ts';
import type { AdminChat } from '../../../host/admin/admin-chats.ts';

function setup(adminChat?: string) {
  const notices: { key: string; text: string; except?: AdminChat }[] = [];
  let running = true;
  const created = createChannelNotices({
    notify: (key, text, opts) =>
      notices.push({ key, text, ...(opts?.except ? { except: opts.except } : {}) }),
    running: () => running,
  });
  const ch = { name: 'telegram', adminChatId: () => adminChat };
  return { notices, ch, channelNotices: created, stop: () => (running = false) };
}

const since = '2026-01-01T00:00:00.000Z';

describe('channel notices', () => {
  it('tells the owner a channel was lost, except in that channel’s own admin chat', () => {
    const { notices, ch, channelNotices } = setup('owner-chat');
    channelNotices.statusChanged(ch, 'connected', { state: 'logged-out', reason: 'token revoked', since });
    expect(notices).toEqual([
      {
        key: `channel-status:telegram:logged-out:${since}`,
        text: 'The telegram channel is logged-out: token revoked.',
        except: { channel: 'telegram', chatId: 'owner-chat' },
      },
    ]);
  });

  it('says nothing when the state did not change or the host is stopping', () => {
    const { notices, ch, channelNotices, stop } = setup();
    channelNotices.statusChanged(ch, 'stopped', { state: 'stopped', since });
    stop();
    channelNotices.statusChanged(ch, 'connected', { state: 'stopped', since });
    channelNotices.statusChanged(ch, 'connected', { state: 'connecting', since });
    expect(notices).toEqual([]);
  });

  it('passes on a working channel’s warning under a key made of the warning itself', () => {
    const { notices, ch, channelNotices } = setup();
    const warning = { state: 'connected' as const, reason: 'privacy mode hides the trigger', since };
    channelNotices.statusChanged(ch, 'connecting', warning);
    channelNotices.statusChanged(ch, 'connected', { ...warning, since: 'later' });
    expect(notices).toHaveLength(2);
    expect(notices[0]?.key).toBe(notices[1]?.key);
    expect(notices[0]?.key).toMatch(/^channel-note:telegram:[0-9a-f]{16}$/);
    expect(notices[0]?.text).toBe('The telegram channel: privacy mode hides the trigger');
  });
});
