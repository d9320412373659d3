import { fetch, FormData, type Dispatcher } from 'undici';
import { z } from 'zod';
import { errorMessage } from '../../errors/error-message.ts';
import type { LogLevels } from '../../logging/logger.ts';
import { transcriptionPricePerMinute } from '../spend/price-table.ts';
import { usdToMicros } from '../spend/pricing.ts';
import type { SpendCap } from '../spend/spend-cap.ts';
import { transcriptionRunId } from '../spend/transcription-run-id.ts';
import type { UsageStore } from '../spend/usage-store.ts';
import type { Clock } from '../../time/clock.ts';
import { timeoutSignal } from '../../time/clock-timers.ts';

/** `[media.transcription]` as the gateway reads it (the section is the media step's; see media-config.ts). */
export interface TranscriptionSettings {
  model: string;
  /** A local OpenAI-compatible server; unset: the provider, with the provider's key. */
  base_url?: string | undefined;
  api_key_env?: string | undefined;
  max_seconds: number;
  /** The owner's price for `model`; unset: the table's (`transcriptionPricePerMinute`). */
  price_per_minute_usd?: number | undefined;
  timeout_ms: number;
}

export interface TranscriptionRequest {
  groupId: string;
  audio: Uint8Array;
  mime: string;
  fileName: string;
  /** As the platform declared it; the reservation does not rely on it. */
  durationSec: number | undefined;
}

export type TranscriptionResult = { ok: true; text: string } | { ok: false; reason: string };

export interface TranscriptionDeps {
  settings: () => TranscriptionSettings;
  /** The provider's API base (ends in /v1) and its key: used when no local server is configured. */
  providerApiBase: string;
  providerApiKey: string;
  secret: (name: string) => string | undefined;
  spendCap: Pick<SpendCap, 'reserve'>;
  usageStore: Pick<UsageStore, 'recordUsage'>;
  day: () => string;
  /** Epoch ms: the minute a transcription's usage is recorded under. */
  clock: Clock;
  dispatcher: Dispatcher;
  logger: LogLevels;
}

/** What an OpenAI-compatible transcription answers (json): the text, and sometimes how much audio it billed. */
const answerSchema = z.object({
  text: z.string().max(200_000),
  duration: z.number().nonnegative().optional(),
  usage: z.object({ type: z.string(), seconds: z.number().nonnegative().optional() }).loose().optional(),
});

/** A transcript stays well inside one chat message of the agent protocol. */
const MAX_TRANSCRIPT_CHARS = 20_000;

const costOf = (seconds: number, pricePerMinute: number) => usdToMicros((seconds / 60) * pricePerMinute);

/**
 * Voice → text, for the host (never for a container: no route of the gateway's server leads here, so a
 * run cannot spend on audio it made up). It counts like any request of the group: the worst case (the
 * longest note `max_seconds` allows, at the model's price per minute: the owner's `price_per_minute_usd`, else
 * the table's, else the dearest listed) is reserved against the group's spend cap
 * before anything is sent, and settled at the seconds the server says it billed, else the declared
 * duration, else the reservation. The real key goes only to the provider's own base URL; a local server
 * gets its own key variable or none.
 */
export function createTranscription(deps: TranscriptionDeps) {
  return async function transcribe(req: TranscriptionRequest): Promise<TranscriptionResult> {
    const s = deps.settings();
    const day = deps.day();
    const perMinute = transcriptionPricePerMinute(s.model, s.price_per_minute_usd);
    const worst = costOf(s.max_seconds, perMinute);
    const reserved = await deps.spendCap.reserve(req.groupId, day, worst);
    if (!reserved.ok) return { ok: false, reason: 'the group reached its daily spending cap' };
    let billedSeconds: number | undefined;
    let answered = false;
    try {
      const base = (s.base_url ?? deps.providerApiBase).replace(/\/+$/, '');
      const key = s.base_url ? (s.api_key_env ? deps.secret(s.api_key_env) : undefined) : deps.providerApiKey;
      const form = new FormData();
      form.append('file', new Blob([req.audio], { type: req.mime }), req.fileName);
      form.append('model', s.model);
      form.append('response_format', 'json');
      const res = await fetch(`${base}/audio/transcriptions`, {
        method: 'POST',
        headers: key ? { authorization: `Bearer ${key}` } : {},
        body: form,
        signal: timeoutSignal(deps.clock, s.timeout_ms),
        dispatcher: deps.dispatcher,
      });
      const raw = await res.text();
      if (!res.ok) return { ok: false, reason: `the transcription service answered HTTP ${res.status}` };
      answered = true;
      const parsed = answerSchema.safeParse(JSON.parse(raw));
      if (!parsed.success) return { ok: false, reason: 'the transcription service gave no text' };
      billedSeconds = parsed.data.usage?.seconds ?? parsed.data.duration;
      const text = parsed.data.text.trim().slice(0, MAX_TRANSCRIPT_CHARS);
      return text ? { ok: true, text } : { ok: false, reason: 'no speech was heard' };
    } catch (err) {
      deps.logger.warn({ groupId: req.groupId, err: errorMessage(err) }, 'gateway: transcription failed');
      return { ok: false, reason: `the transcription service failed (${errorMessage(err)})` };
    } finally {
      // A refused or failed request is not billed; an answered one at what it says it billed.
      const seconds = billedSeconds ?? req.durationSec;
      const cost = !answered ? 0 : seconds === undefined ? worst : costOf(seconds, perMinute);
      await reserved.reservation.settle(async () => {
        if (answered)
          await deps.usageStore.recordUsage({
            runId: transcriptionRunId(req.groupId, deps.clock.now()),
            groupId: req.groupId,
            day,
            model: s.model,
            promptTokens: 0,
            completionTokens: 0,
            costMicros: cost,
          });
        return cost;
      });
    }
  };
}

export type Transcribe = ReturnType<typeof createTranscription>;
