import { afterEach, describe, expect, it } from 'vitest';
import { gatewayConfigSchema, providerConfigSchema } from '../../../host/gateway/config.ts';
import { createGateway } from '../../../host/gateway/gateway.ts';
import type { TranscriptionSettings } from '../../../host/gateway/transcription/transcription.ts';
import { mediaConfigSchema } from '../../../host/router/media/media-config.ts';
import { startFakeProvider, type FakeProvider } from '../../fakes/fake-provider.ts';
import { createMemoryUsageStore } from '../../fakes/memory-usage-store.ts';
import { PNG_1X1, voiceNote } from '../../helpers/media-samples.ts';
import { systemClock } from '../../../host/time/clock.ts';

const REAL_KEY = 'sk-real-provider-key-0123456789abcdef';
const LOCAL_KEY = 'local-whisper-key';
const NOW = Date.UTC(2026, 10, 27, 8, 0);
const DAY = '2026-11-27';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

async function provider(apiKey: string, heard = 'buy milk and bread'): Promise<FakeProvider> {
  const fake = await startFakeProvider({ apiKey, transcribe: () => heard });
  closers.push(() => fake.close());
  return fake;
}

function gatewayFor(
  fake: FakeProvider,
  opts: { capUsd?: number; transcription?: Record<string, unknown>; secrets?: Record<string, string> } = {},
) {
  const usageStore = createMemoryUsageStore();
  const settings: TranscriptionSettings = mediaConfigSchema.parse({
    transcription: opts.transcription ?? {},
  }).transcription;
  const gateway = createGateway({
    config: () => gatewayConfigSchema.parse({ daily_cap_usd: opts.capUsd ?? 5 }),
    provider: providerConfigSchema.parse({ base_url: fake.openaiBaseUrl, model: 'fake-model' }),
    providerApiKey: REAL_KEY,
    usageStore,
    clock: { ...systemClock, now: () => NOW },
    timezone: () => 'UTC',
    logger: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
    maxOutputTokens: 1000,
    transcription: () => settings,
    secret: (name) => opts.secrets?.[name],
  });
  closers.push(() => gateway.close());
  return { gateway, usageStore };
}

const voice = (audio: Uint8Array, durationSec?: number) => ({
  groupId: 'family',
  audio,
  mime: 'audio/ogg; codecs=opus',
  fileName: 'abc-voice.ogg',
  durationSec,
});

describe('transcription through the gateway', () => {
  it("sends real Ogg/Opus audio to the provider's route with the real key and counts what it billed", async () => {
    const fake = await provider(REAL_KEY);
    const { gateway, usageStore } = gatewayFor(fake);
    const result = await gateway.transcribe(voice(voiceNote('buy milk and bread'), 2));
    expect(result).toEqual({ ok: true, text: 'buy milk and bread' });
    expect(fake.transcriptions).toEqual([
      {
        model: 'whisper-1',
        fileName: 'abc-voice.ogg',
        mime: 'audio/ogg; codecs=opus',
        bytes: expect.any(Number),
      },
    ]);
    expect(fake.requests[0]?.headers.authorization).toBe(`Bearer ${REAL_KEY}`);
    // The fake bills 3 s; at $0.006 per minute that is $0.0003.
    expect(usageStore.records).toEqual([
      {
        // Voice notes belong to no run: the group's transcriptions of that minute (UTC).
        runId: `transcription:family:${new Date(NOW).toISOString().slice(0, 16)}Z`,
        groupId: 'family',
        day: DAY,
        model: 'whisper-1',
        promptTokens: 0,
        completionTokens: 0,
        costMicros: 300,
      },
    ]);
  });

  it("prices each model's minutes by the table, an unlisted model at the dearest listed price, the owner's price over both", async () => {
    const fake = await provider(REAL_KEY);
    const billed = async (transcription: Record<string, unknown>) => {
      const { gateway, usageStore } = gatewayFor(fake, { transcription });
      await gateway.transcribe(voice(voiceNote('hello'), 2));
      return usageStore.records.map((r) => r.costMicros);
    };
    // The fake bills 3 s: $0.003 per minute is 150 micro-dollars, $0.006 is 300.
    expect(await billed({ model: 'gpt-4o-mini-transcribe' })).toEqual([150]);
    expect(await billed({ model: 'gpt-4o-transcribe' })).toEqual([300]);
    expect(await billed({ model: 'whisper-2-unreleased' })).toEqual([300]);
    expect(await billed({ model: 'whisper-2-unreleased', price_per_minute_usd: 0.02 })).toEqual([1000]);
  });

  it('sends nothing once the group reached its spend cap, and says so', async () => {
    const fake = await provider(REAL_KEY);
    const { gateway, usageStore } = gatewayFor(fake, { capUsd: 0 });
    const result = await gateway.transcribe(voice(voiceNote('hello'), 1));
    expect(result).toEqual({ ok: false, reason: 'the group reached its daily spending cap' });
    expect(fake.requests).toEqual([]);
    expect(usageStore.records).toEqual([]);
  });

  it("sends voice to a configured local server with that server's key, never the provider's", async () => {
    const fake = await provider(REAL_KEY);
    const local = await provider(LOCAL_KEY, 'heard locally');
    const { gateway, usageStore } = gatewayFor(fake, {
      transcription: { base_url: local.openaiBaseUrl, api_key_env: 'LOCAL_KEY', price_per_minute_usd: 0 },
      secrets: { LOCAL_KEY },
    });
    expect(await gateway.transcribe(voice(voiceNote('hello'), 1))).toEqual({
      ok: true,
      text: 'heard locally',
    });
    expect(fake.requests).toEqual([]);
    expect(local.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${LOCAL_KEY}`]);
    expect(usageStore.records.map((r) => r.costMicros)).toEqual([0]);
  });

  it('reports a refused file as a reason and bills nothing for it', async () => {
    const fake = await provider(REAL_KEY);
    const { gateway, usageStore } = gatewayFor(fake);
    const result = await gateway.transcribe({ ...voice(PNG_1X1), mime: 'image/png' });
    expect(result).toEqual({ ok: false, reason: 'the transcription service answered HTTP 400' });
    expect(usageStore.records).toEqual([]);
  });
});
