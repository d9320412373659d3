import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { ChannelStatus } from '../../../host/channels/channel.ts';
import { openAuthStore } from '../../../host/channels/whatsapp/auth-store.ts';
import {
  createConnectionController,
  type ConnectionEvents,
} from '../../../host/channels/whatsapp/connection-controller.ts';
import { LAST_TERMINAL_CLOSE } from '../../../host/channels/whatsapp/whatsapp-channel.ts';
import { whatsappConfigSchema } from '../../../host/channels/whatsapp/whatsapp-config.ts';
import {
  whatsappChannelDefinition,
  whatsappDoctor,
} from '../../../host/channels/whatsapp/whatsapp-definition.ts';
import { fakeClock } from '../../helpers/fake-clock.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

function setup(policy = {}) {
  const time = fakeClock(0);
  const clock = { advance: (ms: number) => time.advance(ms), armed: () => time.live().length };
  const connections: { events: ConnectionEvents; ended: string[] }[] = [];
  const statuses: ChannelStatus[] = [];
  const controller = createConnectionController({
    connect: (events) => {
      const c = { events, ended: [] as string[], end: (r: string) => c.ended.push(r) };
      connections.push(c);
      return c;
    },
    onStatus: (s) => statuses.push(s),
    logger: pino({ level: 'silent' }),
    clock: time.clock,
    random: () => 0.5,
    policy: { jitter: 0, ...policy },
  });
  const last = () => connections.at(-1) as (typeof connections)[number];
  return { clock, connections, statuses, controller, last };
}

describe('WhatsApp connection controller', () => {
  it('backs off 2 s, 4 s, 8 s … up to 30 s with one timer, and starts over after a healthy connection', () => {
    const { clock, connections, controller, last } = setup();
    controller.start();
    const delays: number[] = [];
    for (let i = 0; i < 6; i++) {
      last().events.closed(428, 'Connection Terminated');
      expect(controller.pendingReconnects()).toBe(1);
      const before = connections.length;
      let waited = 0;
      while (connections.length === before) {
        clock.advance(500);
        waited += 500;
      }
      delays.push(waited);
    }
    expect(delays).toEqual([2_000, 4_000, 8_000, 16_000, 30_000, 30_000]);
    last().events.opened();
    clock.advance(61_000);
    last().events.activity();
    last().events.closed(428, 'Connection Terminated');
    const before = connections.length;
    clock.advance(2_000);
    expect(connections.length).toBe(before + 1);
  });

  it('reconnects at once when WhatsApp asks for a restart (515)', () => {
    const { connections, controller, last } = setup();
    controller.start();
    last().events.opened();
    last().events.closed(515, 'Stream Errored (restart required)');
    expect(connections).toHaveLength(2);
    expect(controller.pendingReconnects()).toBe(0);
  });

  it.each([
    [401, 'logged-out', /whatsapp login/],
    [440, 'stopped', /Another session/],
  ])('stops for good on %i and says what to do', (code, state, fix) => {
    const { clock, connections, controller, last, statuses } = setup();
    controller.start();
    last().events.opened();
    last().events.closed(code, 'Stream Errored (conflict)');
    expect(statuses.at(-1)?.state).toBe(state);
    expect(statuses.at(-1)?.reason).toMatch(fix);
    clock.advance(600_000);
    expect(connections).toHaveLength(1);
    expect(clock.armed()).toBe(0);
  });

  it('opens the breaker after repeated failures and leaves no timer', () => {
    const { clock, controller, last, statuses } = setup({ maxFailures: 4 });
    controller.start();
    for (let i = 0; i < 4; i++) {
      last().events.closed(undefined, 'connect ECONNREFUSED');
      clock.advance(31_000);
    }
    expect(statuses.at(-1)?.state).toBe('stopped');
    expect(statuses.at(-1)?.reason).toMatch(/failed 4 times in a row.*ECONNREFUSED/);
    expect(clock.armed()).toBe(0);
  });

  it('ends a socket that is open but silent, per connection, and reconnects', () => {
    const { clock, connections, controller, last } = setup({ silentAfterMs: 90_000 });
    controller.start();
    last().events.opened();
    clock.advance(60_000);
    last().events.activity();
    clock.advance(60_000);
    expect(connections).toHaveLength(1);
    clock.advance(31_000);
    expect(connections[0]?.ended[0]).toMatch(/nothing arrived/);
    clock.advance(2_000);
    expect(connections).toHaveLength(2);
    // The new connection has its own baseline: the old one's silence does not count against it.
    last().events.opened();
    clock.advance(80_000);
    expect(connections).toHaveLength(2);
  });

  it('ignores events from a connection it has left, and stop leaves nothing armed', async () => {
    const { clock, connections, controller, last } = setup();
    controller.start();
    const first = last();
    first.events.closed(428, 'gone');
    clock.advance(2_000);
    first.events.opened();
    expect(controller.status().state).toBe('connecting');
    const waiting = controller.whenOpen(10_000);
    last().events.opened();
    expect(await waiting).toBe(connections[1]);
    controller.stop('host stopping');
    expect(controller.status().state).toBe('stopped');
    expect(clock.armed()).toBe(0);
    expect(connections[1]?.ended).toEqual(['host stopping']);
    expect(await controller.whenOpen(1_000)).toBeUndefined();
  });
});

const tempDir = useTempDirs('carapace-wa-auth-');

describe('WhatsApp auth store', () => {
  it('keeps credentials and every key type, the v7 ones included, in a 0700 folder', async () => {
    const dir = path.join(tempDir(), 'whatsapp');
    const a = openAuthStore(dir);
    a.state.creds.me = { id: '15550000000:1@s.whatsapp.net', lid: '5:1@lid' };
    a.state.creds.registered = true;
    await a.saveCreds();
    await a.state.keys.set({
      'lid-mapping': { '15551234567': '111', '111_reverse': '15551234567' },
      'device-list': { '15551234567': ['0', '3'] },
      tctoken: { '111@lid': { token: Buffer.from('tok'), timestamp: '1' } },
      session: { '111.3': new Uint8Array([1, 2, 3]) },
    });
    await a.flush();
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    for (const f of fs.readdirSync(dir)) expect(fs.statSync(path.join(dir, f)).mode & 0o777).toBe(0o600);

    const b = openAuthStore(dir);
    expect(b.isLinked()).toBe(true);
    expect(b.state.creds.me?.lid).toBe('5:1@lid');
    expect(await b.state.keys.get('lid-mapping', ['15551234567', '111_reverse'])).toEqual({
      '15551234567': '111',
      '111_reverse': '15551234567',
    });
    expect(await b.state.keys.get('device-list', ['15551234567'])).toEqual({ '15551234567': ['0', '3'] });
    const tc = await b.state.keys.get('tctoken', ['111@lid']);
    expect(Buffer.from(tc['111@lid']?.token ?? []).toString()).toBe('tok');
    expect(Buffer.from((await b.state.keys.get('session', ['111.3']))['111.3'] ?? [])).toEqual(
      Buffer.from([1, 2, 3]),
    );
  });

  it('writes credential saves one after the other: the last save wins and the file is never torn', async () => {
    const dir = path.join(tempDir(), 'whatsapp');
    const a = openAuthStore(dir);
    const saves: Promise<void>[] = [];
    for (let i = 0; i < 50; i++) {
      a.state.creds.me = {
        id: `1555000${String(i).padStart(4, '0')}:1@s.whatsapp.net`,
        name: 'x'.repeat(i * 100),
      };
      a.state.creds.registered = true;
      saves.push(a.saveCreds());
    }
    await Promise.all(saves);
    const b = openAuthStore(dir);
    expect(b.state.creds.me?.id).toBe('15550000049:1@s.whatsapp.net');
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('forgets everything on clear', async () => {
    const dir = path.join(tempDir(), 'whatsapp');
    const a = openAuthStore(dir);
    a.state.creds.me = { id: '15550000000:1@s.whatsapp.net' };
    a.state.creds.registered = true;
    await a.saveCreds();
    await a.state.keys.set({ session: { s: new Uint8Array([1]) } });
    await a.clear();
    expect(a.isLinked()).toBe(false);
    expect(fs.readdirSync(dir)).toEqual([]);
    expect(openAuthStore(dir).isLinked()).toBe(false);
  });
});

describe('WhatsApp doctor and registry entry', () => {
  const state = () => {
    const m = new Map<string, string>();
    return { get: (k: string) => m.get(k), set: (k: string, v: string) => void m.set(k, v) };
  };
  const config = whatsappConfigSchema.parse({});

  it('checks the pinned Baileys and WhatsApp Web versions, and says when a login is needed', async () => {
    const lines = whatsappDoctor({ config, dataDir: path.join(tempDir(), 'wa'), state: state() });
    expect(lines[0]).toEqual({
      ok: true,
      line: 'WhatsApp: Baileys 7.0.0-rc14, WhatsApp Web 2.3000.1043857760 (pinned)',
    });
    expect(lines[1]).toMatchObject({
      ok: false,
      line: expect.stringMatching(/needs login.*carapace whatsapp login/),
    });
  });

  it('reports the linked number and the last close WhatsApp made final', async () => {
    const dir = path.join(tempDir(), 'wa');
    const a = openAuthStore(dir);
    a.state.creds.me = { id: '15550000000:1@s.whatsapp.net' };
    a.state.creds.registered = true;
    await a.saveCreds();
    await a.flush();
    const s = state();
    s.set(LAST_TERMINAL_CLOSE, JSON.stringify({ reason: 'Another session took over' }));
    const lines = whatsappDoctor({ config, dataDir: dir, state: s });
    expect(lines.slice(1)).toEqual([
      { ok: true, line: 'WhatsApp: linked as +15550000000' },
      { ok: false, line: 'WhatsApp: the last connection ended for good: Another session took over' },
    ]);
  });

  it('accepts group and self-chat JIDs as chat ids, nothing else', () => {
    const { pattern } = whatsappChannelDefinition.chatId;
    expect(['120363012345678901@g.us', '15550000000@s.whatsapp.net'].every((c) => pattern.test(c))).toBe(
      true,
    );
    expect(['-1001234', 'family', '123@lid', 'x@g.us'].some((c) => pattern.test(c))).toBe(false);
  });
});
