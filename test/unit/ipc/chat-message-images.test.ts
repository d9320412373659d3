import { describe, expect, it } from 'vitest';
import { chatMessageSchema } from '../../../container-agent/src/protocol.ts';
import { toChatMessage } from '../../../host/ipc/run-session.ts';
import type { StoredMessage } from '../../../host/store/messages-store.ts';

const photo = (media: Partial<NonNullable<StoredMessage['media']>>): StoredMessage => ({
  id: 7,
  groupId: 'family',
  channel: 'telegram',
  chatId: '-1001',
  externalId: '12',
  senderId: '42',
  senderName: 'Ann',
  text: '[photo, 80 KB, image/jpeg, in the group folder at media/2026-11-27/abc-photo.jpg]',
  sentAt: '2026-11-27T08:00:00.000Z',
  triggers: true,
  media: {
    kind: 'photo',
    senderId: '42',
    status: 'stored',
    path: 'media/2026-11-27/abc-photo.jpg',
    mime: 'image/jpeg',
    bytes: 80_000,
    ...media,
  },
});

describe('photos offered to the model in the messages a run reads', () => {
  it('names a stored photo within the image limit as an image the agent may show the model', () => {
    const m = toChatMessage(photo({}), 100_000);
    expect(m.image).toEqual({ path: 'media/2026-11-27/abc-photo.jpg', mime: 'image/jpeg' });
    expect(chatMessageSchema.safeParse(m).success).toBe(true);
  });

  it('keeps only the text line for a text-only model, a photo over the limit, a refused file or a PDF', () => {
    expect(toChatMessage(photo({}), 0).image).toBeUndefined();
    expect(toChatMessage(photo({ bytes: 100_001 }), 100_000).image).toBeUndefined();
    expect(toChatMessage(photo({ status: 'refused', path: undefined }), 100_000).image).toBeUndefined();
    expect(toChatMessage(photo({ mime: 'application/pdf' }), 100_000).image).toBeUndefined();
    expect(toChatMessage(photo({}), 0).text).toContain('in the group folder at media/');
  });
});
