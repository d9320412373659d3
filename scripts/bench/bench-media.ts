/**
 * Media taken in by the host, and transcription through the gateway.
 *
 * 1. A 10 MiB document from the fake Bot API (getFile, then the file route) taken in by the real media
 *    step: download within the cap, sniff (file-type), the group folder's quota walk, the guarded write,
 *    the audit row and the message. Baseline in the same run: a bare fetch of the same file written with
 *    one fs.writeFile. Host CPU (user + system) and wall time per file, medians, and the ratio; the extra
 *    memory (RSS and array buffers) while one file is taken in.
 * 2. A voice note transcribed through the gateway (spend cap reservation, multipart upload, settlement,
 *    usage row) against the fake provider; baseline, alternated with it: the same multipart POST sent
 *    straight to the fake (the provider's own time). The difference of the medians is the host's overhead.
 *
 *   node --import tsx scripts/bench/bench-media.ts
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { telegramMedia } from '../../host/channels/telegram/telegram-media.ts';
import { folderUsage } from '../../host/containers/mounts/disk-quota.ts';
import { gatewayConfigSchema, providerConfigSchema } from '../../host/gateway/config.ts';
import { createGateway } from '../../host/gateway/gateway.ts';
import { createIngest } from '../../host/router/ingest.ts';
import { mediaConfigSchema } from '../../host/router/media/media-config.ts';
import { createMediaIngest } from '../../host/router/media/media-ingest.ts';
import { openStore } from '../../host/store/store.ts';
import { startFakeProvider } from '../../test/fakes/fake-provider.ts';
import { startFakeTelegram } from '../../test/fakes/fake-telegram-api.ts';
import { createMemoryUsageStore } from '../../test/fakes/memory-usage-store.ts';
import { pdfWithText, voiceNote } from '../../test/helpers/media-samples.ts';
import { isMain, median, printFigures, round } from './stats.ts';
import { systemClock } from '../../host/time/clock.ts';

const FILE_SAMPLES = 9;
const VOICE_SAMPLES = 15;
const MiB = 1024 * 1024;

const cpuMs = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;

async function benchIngest(): Promise<Record<string, number | string>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-bench-media-'));
  const fake = await startFakeTelegram();
  const store = openStore({ file: path.join(dir, 'carapace.db') });
  try {
    store.groups.add({ id: 'family', channel: 'telegram', chatId: '-100', name: 'Family', isAdmin: false });
    const groupDir = path.join(dir, 'groups', 'family');
    fs.mkdirSync(groupDir, { recursive: true });
    const logger = pino({ level: 'silent' });
    const ingest = createIngest({ store, assistantName: () => 'Andy', onTriggered: () => undefined, logger });
    const config = mediaConfigSchema.parse({ max_bytes: { document: 12 * MiB } });
    const ingestMedia = createMediaIngest({
      config: () => config,
      groupTranscribes: () => false,
      store,
      groupDir: () => groupDir,
      quotaProblem: async (_id, add) =>
        (await folderUsage(groupDir)).bytes + add > 1024 * MiB ? 'full' : null,
      transcribe: () => undefined,
      ingest,
      clock: systemClock,
      logger,
    });
    // A real PDF head, padded to 10 MiB: sniffed as what it is.
    const pdf = pdfWithText('bench');
    const bytes = Buffer.concat([pdf, Buffer.alloc(10 * MiB - pdf.byteLength, 0x20)]);
    const fileUrl = (p: string) => `${fake.apiRoot}/file/bot${fake.token}/${p}`;

    const ours: { cpu: number; wall: number; rss: number; buffers: number }[] = [];
    const bare: { cpu: number; wall: number }[] = [];
    for (let i = 0; i < FILE_SAMPLES; i++) {
      const { fileId } = fake.media({
        chat: { id: -100, type: 'supergroup' },
        from: { id: 1 },
        kind: 'document',
        bytes,
        fileName: `f${i}.pdf`,
      });
      const filePath = `documents/file_${fileId}.bin`;
      // The fake's real getFile over HTTP would add a round trip the baseline does not make.
      const realApi = {
        getFile: async () => ({ file_id: fileId, file_unique_id: fileId, file_path: filePath }),
      };

      // Baseline: fetch and one write, nothing checked.
      let cpu = process.cpuUsage();
      let t0 = performance.now();
      const res = await fetch(fileUrl(filePath));
      await fs.promises.writeFile(path.join(dir, `bare-${i}`), Buffer.from(await res.arrayBuffer()));
      bare.push({ cpu: cpuMs(process.cpuUsage(cpu)), wall: performance.now() - t0 });

      global.gc?.();
      const before = process.memoryUsage();
      let peakRss = before.rss;
      let peakBuffers = before.arrayBuffers;
      const sampler = setInterval(() => {
        const m = process.memoryUsage();
        peakRss = Math.max(peakRss, m.rss);
        peakBuffers = Math.max(peakBuffers, m.arrayBuffers);
      }, 2);
      cpu = process.cpuUsage();
      t0 = performance.now();
      const result = await ingestMedia({
        channel: 'telegram',
        chatId: '-100',
        externalId: `m${i}`,
        senderId: '1',
        senderName: 'Ann',
        text: '',
        sentAt: new Date().toISOString(),
        mentionsBot: false,
        repliesToBot: false,
        fromOwner: false,
        origin: { kind: 'own' },
        media: telegramMedia({ kind: 'document', fileId, fileName: `f${i}.pdf` }, realApi as never, fileUrl),
      });
      const wall = performance.now() - t0;
      const used = cpuMs(process.cpuUsage(cpu));
      clearInterval(sampler);
      if (!result.stored) throw new Error('the benchmark file was not stored');
      ours.push({ cpu: used, wall, rss: peakRss - before.rss, buffers: peakBuffers - before.arrayBuffers });
    }
    const stored = store.messages.after('family', 0).filter((m) => m.media?.status === 'stored').length;
    if (stored !== FILE_SAMPLES) throw new Error(`only ${stored} of ${FILE_SAMPLES} files were stored`);
    const cpuOurs = median(ours.map((s) => s.cpu));
    const cpuBare = median(bare.map((s) => s.cpu));
    return {
      'file size (MiB)': 10,
      'host CPU per file, media step (ms, median)': round(cpuOurs, 1),
      'host CPU per file, bare fetch + write (ms, median)': round(cpuBare, 1),
      'CPU ratio (media step / bare)': round(cpuOurs / cpuBare, 2),
      'wall per file, media step (ms, median)': round(median(ours.map((s) => s.wall)), 1),
      'wall per file, bare (ms, median)': round(median(bare.map((s) => s.wall)), 1),
      'extra RSS while taking one in (MiB, median)': round(median(ours.map((s) => s.rss)) / MiB, 1),
      'extra array buffers while taking one in (MiB, median)': round(
        median(ours.map((s) => s.buffers)) / MiB,
        1,
      ),
    };
  } finally {
    store.close();
    await fake.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function benchTranscription(): Promise<Record<string, number | string>> {
  const provider = await startFakeProvider({ apiKey: 'k', transcribe: () => 'hello there' });
  const gateway = createGateway({
    config: () => gatewayConfigSchema.parse({}),
    provider: providerConfigSchema.parse({ base_url: provider.openaiBaseUrl, model: 'fake-model' }),
    providerApiKey: 'k',
    usageStore: createMemoryUsageStore(),
    clock: systemClock,
    timezone: () => 'UTC',
    logger: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
    maxOutputTokens: 1000,
    transcription: () => mediaConfigSchema.parse({}).transcription,
  });
  const audio = voiceNote('hello there');
  const direct = async () => {
    const form = new FormData();
    form.append('file', new Blob([audio], { type: 'audio/ogg' }), 'v.ogg');
    form.append('model', 'whisper-1');
    form.append('response_format', 'json');
    const res = await fetch(`${provider.openaiBaseUrl}/audio/transcriptions`, {
      method: 'POST',
      headers: { authorization: 'Bearer k' },
      body: form,
    });
    await res.text();
  };
  const viaGateway = async () => {
    const r = await gateway.transcribe({
      groupId: 'g',
      audio,
      mime: 'audio/ogg',
      fileName: 'v.ogg',
      durationSec: 1,
    });
    if (!r.ok) throw new Error(r.reason);
  };
  try {
    const times = { direct: [] as number[], gateway: [] as number[] };
    await direct();
    await viaGateway();
    for (let i = 0; i < VOICE_SAMPLES; i++) {
      // Alternated, so both see the same machine load.
      for (const [name, fn] of [
        ['direct', direct],
        ['gateway', viaGateway],
      ] as const) {
        const t0 = performance.now();
        await fn();
        times[name].push(performance.now() - t0);
      }
    }
    const d = median(times.direct);
    const g = median(times.gateway);
    return {
      'voice note (KiB)': round(audio.byteLength / 1024, 1),
      'straight to the provider: its own time (ms, median)': round(d, 1),
      'through the gateway (ms, median)': round(g, 1),
      'host overhead (ms, difference of medians)': round(g - d, 1),
    };
  } finally {
    await gateway.close();
    await provider.close();
  }
}

export async function benchMedia(): Promise<Record<string, number | string>> {
  return { ...(await benchIngest()), ...(await benchTranscription()) };
}

if (isMain(import.meta.url))
  printFigures('media in: 10 MiB file, and transcription overhead', await benchMedia());
