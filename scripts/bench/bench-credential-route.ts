/**
 * What the credential route adds (issue 25): the same small GET to a local recording API, direct and
 * through the gateway's credential route (key check, allowlist, the trust matrix's decision and its audit
 * rows in SQLite, the header added, the answer streamed through the redactor), alternating in one run;
 * then a 50 MiB answer streamed through the route and direct, alternating three times after a warm-up,
 * with the process's RSS (client, route and upstream are one process) sampled as it arrives. Goals: added p50 < 2 ms; RSS growth < 20 MiB for the 50 MiB body.
 *
 *   node --import tsx scripts/bench/bench-credential-route.ts
 */
import { request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { startRecordingApi } from '../../test/fakes/recording-api.ts';
import { startCredentialGateway } from '../../test/helpers/credential-gateway.ts';
import { isMain, median, percentile, printFigures, round } from './stats.ts';

const N = 400;
const WARMUP = 40;
const BIG = 50 * 1024 * 1024;
const VALUE = 'bench-credential-value-0123456789abcdef';
const MiB = 1024 * 1024;

/** One GET, the body read and dropped; resolves with the milliseconds and the peak RSS seen while reading. */
function get(url: string, key?: string): Promise<{ ms: number; peakRss: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let peakRss = process.memoryUsage.rss();
    let bytes = 0;
    const req = request(
      url,
      { headers: key ? { authorization: `Bearer ${key}` } : { authorization: `Bearer ${VALUE}` } },
      (res) => {
        res.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (bytes % (4 * MiB) < chunk.length) peakRss = Math.max(peakRss, process.memoryUsage.rss());
        });
        res.on('end', () => resolve({ ms: performance.now() - started, peakRss, bytes }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

export async function benchCredentialRoute(): Promise<Record<string, number | string>> {
  const api = await startRecordingApi(`Bearer ${VALUE}`);
  const h = await startCredentialGateway({
    config: {
      credentials: {
        notes: {
          kind: 'http',
          value_env: 'NOTES_KEY',
          base_url: api.url,
          allow: ['GET /notes/**', 'GET /big/*'],
          public_source: false,
          secret_data: false,
          public_sink: true,
          dangerous_writes: false,
        },
      },
      groups: { family: { credentials: ['notes'] } },
    },
    secrets: { NOTES_KEY: VALUE },
  });
  try {
    const { keys } = h.startRun();
    const direct: number[] = [];
    const routed: number[] = [];
    for (let i = 0; i < N + WARMUP; i++) {
      const d = await get(`${api.url}/notes/1`);
      const r = await get(`${h.url}/notes/notes/1`, keys.credentialKey);
      api.requests.length = 0;
      if (i >= WARMUP) {
        direct.push(d.ms);
        routed.push(r.ms);
      }
    }
    const directP50 = percentile(direct, 50);
    const routedP50 = percentile(routed, 50);
    const added = routedP50 - directP50;

    // Streams alternate, after one unmeasured warm-up (the first large body grows the heap either way).
    const stream = async (url: string, key?: string) => {
      global.gc?.();
      const before = process.memoryUsage.rss();
      const got = await get(url, key);
      if (got.bytes !== BIG) throw new Error('the large body did not arrive whole');
      return { growth: (got.peakRss - before) / MiB, s: got.ms / 1000 };
    };
    await stream(`${api.url}/big/${BIG}`);
    const bigDirect: { growth: number; s: number }[] = [];
    const bigRouted: { growth: number; s: number }[] = [];
    for (let i = 0; i < 3; i++) {
      bigRouted.push(await stream(`${h.url}/notes/big/${BIG}`, keys.credentialKey));
      bigDirect.push(await stream(`${api.url}/big/${BIG}`));
    }
    const growth = median(bigRouted.map((b) => b.growth));
    return {
      'direct p50 ms': round(directP50, 3),
      'through the route p50 ms': round(routedP50, 3),
      'added p50 ms': round(added, 3),
      'route / direct p50': round(routedP50 / directP50, 2),
      'goal: added p50 < 2 ms': added < 2 ? 'met' : 'MISSED',
      '50 MiB direct: RSS growth MiB, median of 3': round(median(bigDirect.map((b) => b.growth)), 1),
      '50 MiB through the route: RSS growth MiB, median of 3': round(growth, 1),
      '50 MiB direct: s': round(median(bigDirect.map((b) => b.s)), 2),
      '50 MiB through the route: s': round(median(bigRouted.map((b) => b.s)), 2),
      'goal: RSS growth < 20 MiB': growth < 20 ? 'met' : 'MISSED',
      requests: N,
    };
  } finally {
    await h.close();
    await api.close();
  }
}

if (isMain(import.meta.url)) printFigures('credential route vs direct', await benchCredentialRoute());
