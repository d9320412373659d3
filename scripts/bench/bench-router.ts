/**
 * The host's own overhead per message: from a channel handing a message to ingest until the runner is
 * asked to start (or, for a busy group, until the follow-up is handed to its active run). Measured with
 * 1 group and with 50 groups busy, against a bare INSERT of the same message into the same database.
 */
import { performance } from 'node:perf_hooks';
import type { AgentRunner } from '../../host/router/agent-runner.ts';
import { createRouterHarness } from '../../test/helpers/router-harness.ts';
import { isMain, percentile, printFigures, round } from './stats.ts';

const SAMPLES = 2000;

function timingRunner(onStart: (groupId: string) => void, hold: (groupId: string) => boolean) {
  const finishers = new Map<string, () => void>();
  const onInput: { fn?: () => void } = {};
  const runner: AgentRunner = {
    start(ctx) {
      onStart(ctx.group.id);
      let finish!: () => void;
      const done = new Promise<{ ok: boolean; reason: string }>(
        (r) => (finish = () => r({ ok: true, reason: 'completed' })),
      );
      if (hold(ctx.group.id)) finishers.set(ctx.group.id, finish);
      else queueMicrotask(finish);
      return {
        accepted: Promise.resolve(),
        async input() {
          onInput.fn?.();
          return true;
        },
        stop: finish,
        done,
      };
    },
  };
  return { runner, finishers, onInput };
}

export async function benchRouter(): Promise<Record<string, number | string>> {
  let started = 0;
  let peak = 0;
  let t0 = 0;
  const samples: number[] = [];
  const busy = new Set<string>();
  const { runner, finishers, onInput } = timingRunner(
    () => {
      samples.push(performance.now() - t0);
      started += 1;
      peak = Math.max(peak, h.queue.snapshot().active.length + 1);
    },
    (g) => busy.has(g),
  );
  const h = createRouterHarness({ runner, maxConcurrent: 64 });

  // Baseline: the bare INSERT every message costs anyway.
  h.addGroup('base');
  const baseline: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const t = performance.now();
    h.store.messages.insert({
      groupId: 'base',
      channel: 'test',
      chatId: 'chat-base',
      externalId: `b${i}`,
      senderId: 'u',
      senderName: 'U',
      text: 'hello',
      sentAt: new Date().toISOString(),
      triggers: false,
    });
    baseline.push(performance.now() - t);
  }

  // One group, idle host: each message starts a run that ends at once.
  h.addGroup('solo');
  for (let i = 0; i < SAMPLES; i++) {
    t0 = performance.now();
    h.say('solo', `@Andy message ${i}`);
    await h.queue.whenIdle();
  }
  const solo = samples.splice(0);

  // 50 groups busy with long runs; new groups still start at once (the cap is 64) and follow-ups to the
  // busy groups are handed to their active runs.
  for (let g = 0; g < 50; g++) {
    const id = `busy${g}`;
    busy.add(id);
    h.addGroup(id);
    h.say(id, '@Andy long job');
  }
  const followUps: number[] = [];
  onInput.fn = () => followUps.push(performance.now() - t0);
  for (let i = 0; i < SAMPLES; i++) {
    const g = `busy${i % 50}`;
    t0 = performance.now();
    h.say(g, `@Andy follow-up ${i}`);
    await new Promise((r) => setImmediate(r));
  }
  samples.splice(0);
  for (let i = 0; i < SAMPLES / 4; i++) {
    const id = `fresh${i}`;
    h.addGroup(id);
    t0 = performance.now();
    h.say(id, '@Andy hi');
    await new Promise((r) => setImmediate(r));
  }
  const freshWhileBusy = samples.splice(0);
  for (const f of finishers.values()) f();
  await h.close();

  const b50 = percentile(baseline, 50);
  return {
    'baseline INSERT p50 ms': round(b50),
    '1 group: ingest→runner p50 ms': round(percentile(solo, 50)),
    '1 group: ingest→runner p99 ms': round(percentile(solo, 99)),
    '1 group: p50 / baseline': round(percentile(solo, 50) / b50, 1),
    '50 busy: new group ingest→runner p50 ms': round(percentile(freshWhileBusy, 50)),
    '50 busy: new group ingest→runner p99 ms': round(percentile(freshWhileBusy, 99)),
    '50 busy: follow-up ingest→run input p50 ms': round(percentile(followUps, 50)),
    '50 busy: follow-up ingest→run input p99 ms': round(percentile(followUps, 99)),
    'peak concurrent runs (cap 64)': peak,
    runs: started,
  };
}

if (isMain(import.meta.url)) printFigures('router overhead', await benchRouter());
