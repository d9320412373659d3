/**
 * An account's persona end to end: `[channels.whatsapp] persona` (the default account's table) reaches the
 * system prompt of a run of that account's group in a real container, read by the fake provider behind
 * the host's gateway; the admin group, the owner's on every account, takes no account's persona.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { reply } from '../fakes/fake-provider.ts';
import { turnResponder } from '../fakes/e2e-responders.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { makeTempDir } from '../helpers/temp-dir.ts';
import { eventually } from './e2e-harness.ts';
import { GROUP, startWhatsAppHost, type WhatsAppE2e } from './whatsapp-e2e-host.ts';

const PERSONA = 'Speaks like a ship captain, briefly.';

/** The system prompt of a provider request, as the agent built it. */
const systemPromptOf = (body: unknown): string => {
  const messages = (body as { messages?: { role: string; content: unknown }[] }).messages ?? [];
  const system = messages.find((m) => m.role === 'system');
  return typeof system?.content === 'string' ? system.content : JSON.stringify(system?.content ?? '');
};

await describeDocker("e2e: an account's persona in the agent's prompt (real containers)", () => {
  let t: WhatsAppE2e;

  beforeAll(async () => {
    t = await startWhatsAppHost(makeTempDir('carapace-persona-e2e-'), {
      account: { persona: PERSONA },
      config: {},
    });
    t.e2e.fake.setResponder(turnResponder((turn) => reply.text(`[${turn.group}] aye`)));
  }, 180_000);
  afterAll(async () => {
    await t?.e2e.stop();
    await t?.server.close().catch(() => undefined);
  }, 60_000);

  it("gives the account's group the account's persona and the admin group none", async () => {
    await t.server.inject({
      chatJid: GROUP,
      senderJid: '15551234567@s.whatsapp.net',
      pushName: 'Alice',
      text: '@Andy how are we doing?',
      messageId: 'P1',
    });
    await eventually(
      'the answer at the socket',
      () => t.seam.sent.find((s) => s.text === '[fam] aye'),
      90_000,
    );
    const [fam] = t.e2e.requestsOf('fam');
    expect(systemPromptOf(fam?.body)).toContain(`## Persona\n`);
    expect(systemPromptOf(fam?.body)).toContain(PERSONA);

    const main = await t.e2e.send('main', 'hello');
    expect(main.code).toBe(0);
    const [admin] = t.e2e.requestsOf('main');
    expect(systemPromptOf(admin?.body)).not.toContain('## Persona');
  }, 150_000);
});
