import { z } from 'zod';

const MiB = 1024 * 1024;
const bytes = z
  .number()
  .int()
  .min(0)
  .max(1024 * MiB);

/**
 * `[media]`: what the host takes in from voice notes, photos and files, and how it transcribes voice.
 * Every limit is a cap on bytes downloaded: a file past it is never stored, only named in a placeholder.
 * 0 turns a kind off (a placeholder only).
 */
export const mediaConfigSchema = z
  .object({
    /** Per kind of media, the most bytes the host downloads (Telegram's bots can fetch 20 MB at most). */
    max_bytes: z
      .object({
        voice: bytes.default(10 * MiB),
        audio: bytes.default(20 * MiB),
        photo: bytes.default(10 * MiB),
        document: bytes.default(20 * MiB),
      })
      .strict()
      .prefault({}),
    /**
     * The model takes image parts (a vision model): stored photos up to `max_image_bytes` are shown to it.
     * False for a text-only model: it reads the photo's line ("[photo, … in the group folder at …]") only.
     */
    model_sees_images: z.boolean().default(true),
    /** The largest photo shown to the model (it travels base64 in one request, under [gateway] max_request_bytes). */
    max_image_bytes: bytes.default(2 * MiB),
    /** The largest file a run may send with a message (Telegram bots can send 50 MB). */
    max_send_bytes: bytes.default(20 * MiB),
    /** The longest one download may take before it counts as failed. */
    download_timeout_ms: z.number().int().min(1_000).max(600_000).default(60_000),
    transcription: z
      .object({
        /** Off: voice notes are stored and named, not transcribed (per group: `[groups.<id>] transcribe`). */
        enabled: z.boolean().default(true),
        /** Sent as `model` to `/v1/audio/transcriptions`. */
        model: z.string().trim().min(1).default('whisper-1'),
        /**
         * A local OpenAI-compatible server (whisper.cpp server, speaches…), e.g. "http://127.0.0.1:8000/v1";
         * unset: the provider's own base URL and key.
         */
        base_url: z
          .string()
          .url()
          .refine((v) => /^https?:\/\//i.test(v), 'must start with http:// or https://')
          .optional(),
        /** The variable holding the local server's key, if it wants one; only with base_url. */
        api_key_env: z.string().min(1).optional(),
        /** Voice notes longer than this are not transcribed (a placeholder says so). */
        max_seconds: z.number().int().min(1).max(7_200).default(600),
        /**
         * What one minute of the model's audio costs, counted against the group's spend cap (0 only for a local
         * server). Unset: the shipped table's price for the model (price-table.ts), else the dearest one listed.
         */
        price_per_minute_usd: z.number().nonnegative().optional(),
        timeout_ms: z.number().int().min(1_000).max(600_000).default(120_000),
      })
      .strict()
      .prefault({}),
  })
  .strict();

export type MediaConfig = z.output<typeof mediaConfigSchema>;
