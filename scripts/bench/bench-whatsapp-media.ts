/**
 * A 10 MiB WhatsApp file into host memory: the adapter's download (fetch within the cap, MAC check, AES-CBC
 * decryption with Baileys' keys, length and SHA-256 check) against a baseline measured in the same run on
 * the same server: a plain fetch of the same encrypted bytes within the same cap (what a Telegram file
 * costs the host). Both alternate, 9 samples each; medians of wall time and of the process's CPU time.
 *
 *   node --import tsx scripts/bench/bench-whatsapp-media.ts
 */
import { performance } from 'node:perf_hooks';
import { readWithin } from '../../host/channels/media-download.ts';
import { mediaOf, whatsappMedia } from '../../host/channels/whatsapp/whatsapp-media.ts';
import { startFakeWhatsAppMedia } from '../../test/fakes/whatsapp-media-server.ts';
import { isMain, median, printFigures, round } from './stats.ts';

const SAMPLES = 9;
const MiB = 1024 * 1024;

async function measure(fn: () => Promise<unknown>): Promise<{ wall: number; cpu: number }> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { wall, cpu: (cpu.user + cpu.system) / 1000 };
}

export async function benchWhatsAppMedia(): Promise<Record<string, number | string>> {
  const files = await startFakeWhatsAppMedia();
  try {
    const plain = Buffer.alloc(10 * MiB);
    for (let i = 0; i < plain.length; i += 4096) plain.writeUInt32LE((i * 2654435761) >>> 0, i);
    const served = await files.put(plain, 'document');
    const part = mediaOf({
      documentMessage: { ...served, mimetype: 'application/octet-stream', fileName: 'big.bin' },
    });
    if (!part) throw new Error('no media in the bench message');
    const media = whatsappMedia(part.spec, '127.0.0.1');
    const cap = 20 * MiB;
    const adapter: { wall: number; cpu: number }[] = [];
    const baseline: { wall: number; cpu: number }[] = [];
    for (let i = 0; i < SAMPLES + 1; i++) {
      const a = await measure(() => media.download(cap, AbortSignal.timeout(60_000)));
      const b = await measure(async () => {
        const res = await fetch(served.url);
        if (!res.body) throw new Error('no body');
        return readWithin(res.body, cap);
      });
      // The first pair warms up the JIT and the connection pool.
      if (i === 0) continue;
      adapter.push(a);
      baseline.push(b);
    }
    const m = (xs: { wall: number; cpu: number }[], k: 'wall' | 'cpu') => median(xs.map((x) => x[k]));
    return {
      'baseline plain fetch 10 MiB: wall p50 ms': round(m(baseline, 'wall'), 1),
      'baseline plain fetch 10 MiB: CPU p50 ms': round(m(baseline, 'cpu'), 1),
      'WhatsApp download+decrypt 10 MiB: wall p50 ms': round(m(adapter, 'wall'), 1),
      'WhatsApp download+decrypt 10 MiB: CPU p50 ms': round(m(adapter, 'cpu'), 1),
      'WhatsApp / baseline, wall': round(m(adapter, 'wall') / m(baseline, 'wall'), 2),
      'WhatsApp / baseline, CPU': round(m(adapter, 'cpu') / m(baseline, 'cpu'), 2),
    };
  } finally {
    await files.close();
  }
}

if (isMain(import.meta.url))
  printFigures('WhatsApp media download (10 MiB) vs a plain fetch', await benchWhatsAppMedia());
