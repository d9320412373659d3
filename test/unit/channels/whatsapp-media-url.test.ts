import { describe, expect, it } from 'vitest';
import { mediaUrlFor } from '../../../host/channels/whatsapp/whatsapp-media.ts';

describe('where a WhatsApp media file may be fetched from', () => {
  it("takes WhatsApp's media hosts over HTTPS, with the directPath on the URL's host as Baileys builds it", () => {
    expect(mediaUrlFor({ url: 'https://mmg.whatsapp.net/v/t62/abc.enc?x=1' })).toBe(
      'https://mmg.whatsapp.net/v/t62/abc.enc?x=1',
    );
    expect(mediaUrlFor({ directPath: '/v/t62/abc.enc' })).toBe('https://mmg.whatsapp.net/v/t62/abc.enc');
    expect(
      mediaUrlFor({ url: 'https://media-fra5-1.cdn.whatsapp.net/old', directPath: '/v/t62/abc.enc' }),
    ).toBe('https://media-fra5-1.cdn.whatsapp.net/v/t62/abc.enc');
  });

  it('refuses any other address a sender writes into the message, before anything is fetched', () => {
    const refused = [
      { url: 'http://mmg.whatsapp.net/v/t62/abc.enc' },
      { url: 'https://evilwhatsapp.net/x' },
      { url: 'https://mmg.whatsapp.net.example.com/x' },
      { url: 'http://169.254.169.254/latest/meta-data' },
      // A directPath is put on the URL's host: a stranger's host does not become WhatsApp's.
      { url: 'https://192.168.1.1/', directPath: '/admin' },
      { url: 'file:///etc/passwd' },
      {},
    ];
    for (const s of refused)
      expect(() => mediaUrlFor(s), JSON.stringify(s)).toThrow(/WhatsApp media host|no usable/);
  });

  it('takes the test server `websocket_url` points at, and only its host', () => {
    expect(mediaUrlFor({ url: 'http://127.0.0.1:4000/_crabline/media/x' }, '127.0.0.1')).toBe(
      'http://127.0.0.1:4000/_crabline/media/x',
    );
    expect(() => mediaUrlFor({ url: 'http://localhost:4000/x' }, '127.0.0.1')).toThrow(/WhatsApp media host/);
  });
});
