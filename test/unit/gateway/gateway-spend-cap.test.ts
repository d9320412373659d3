import { describe, expect, it } from 'vitest';
import { worstCaseMicros } from '../../../host/gateway/spend/pricing.ts';
import {
  capAsWritten,
  createSpendCap,
  mayReserve,
  spendCapMessage,
  type Reservation,
} from '../../../host/gateway/spend/spend-cap.ts';
import { createMemoryUsageStore } from '../../fakes/memory-usage-store.ts';

const DAY = '2024-03-11';

function makeCap(capUsd: number | (() => number)) {
  const store = createMemoryUsageStore();
  const warnings: string[] = [];
  const capNow = typeof capUsd === 'number' ? () => capUsd : capUsd;
  const cap = createSpendCap({
    config: () => ({ daily_cap_usd: capNow(), group_caps_usd: {} }),
    usageStore: store,
    onSpendWarning: (groupId) => warnings.push(groupId),
    onNotifyError: () => undefined,
  });
  const charge = (reservation: Reservation, groupId: string, cost: number) =>
    reservation.settle(() => {
      store.addSpend(groupId, DAY, cost);
      return cost;
    });
  return { store, warnings, cap, charge };
}

describe('spend cap arithmetic', () => {
  it('admits a request only while settled spend plus reservations is strictly under the cap', () => {
    expect(mayReserve(100, 0, 0)).toBe(true);
    expect(mayReserve(100, 60, 39)).toBe(true);
    expect(mayReserve(100, 60, 40)).toBe(false);
    expect(mayReserve(100, 100, 0)).toBe(false);
    expect(mayReserve(0, 0, 0)).toBe(false);
  });

  it('prices the worst case at every prompt byte plus the full output bound, at the dearest model of the chain', () => {
    const prices = {
      prices: {
        cheap: { input_per_mtok_usd: 1, output_per_mtok_usd: 2 },
        dear: { input_per_mtok_usd: 3, output_per_mtok_usd: 15 },
      },
    };
    // 1000 bytes × $3/Mtok + 4096 × $15/Mtok = 3000 + 61440 micro-dollars.
    expect(worstCaseMicros(['cheap', 'dear'], 1000, 4096, prices)).toBe(64_440);
    expect(worstCaseMicros(['cheap'], 1000, 4096, prices)).toBe(9_192);
    // A model without a price reserves at the ceiling (the dearest known rates, o1-pro's), never 0.
    expect(worstCaseMicros(['unpriced'], 1000, 4096, prices)).toBe(1000 * 150 + 4096 * 600);
  });

  it('checks a lowered cap from a config reload at the next request', async () => {
    let capUsd = 1;
    const { cap, charge } = makeCap(() => capUsd);
    const first = await cap.reserve('g', DAY, 300_000);
    if (!first.ok) throw new Error('the first request should be admitted');
    await charge(first.reservation, 'g', 300_000);
    capUsd = 0.25;
    expect((await cap.reserve('g', DAY, 1)).ok).toBe(false);
  });

  it('bounds the overshoot by one reservation, however many requests arrive at once and whatever they cost', async () => {
    const { cap, charge, store, warnings } = makeCap(1); // 1_000_000 micro-dollars
    const reservation = 300_000;
    const attempts = await Promise.all(Array.from({ length: 20 }, () => cap.reserve('g', DAY, reservation)));
    const admitted = attempts.flatMap((a) => (a.ok ? [a.reservation] : []));
    // 0, 300k, 600k, 900k are under the cap; the fifth would start at 1.2M.
    expect(admitted).toHaveLength(4);
    // Every admitted request spends its whole worst case.
    await Promise.all(admitted.map((r) => charge(r, 'g', reservation)));
    const spent = await store.spentTodayMicros('g', DAY);
    expect(spent).toBe(1_200_000);
    expect(spent - 1_000_000).toBeLessThanOrEqual(reservation);
    expect((await cap.reserve('g', DAY, 1)).ok).toBe(false);
    // The owner was warned once as the spend passed 80 % and the cap; the refusals tell the caller only.
    expect(warnings).toEqual(['g']);
  });

  it('gives back what a request did not spend, and keeps counting what others hold', async () => {
    const { cap, charge } = makeCap(1);
    const first = await cap.reserve('g', DAY, 900_000);
    const second = await cap.reserve('g', DAY, 50_000);
    if (!first.ok || !second.ok) throw new Error('both should be admitted');
    expect((await cap.reserve('g', DAY, 1)).ok).toBe(true);
    await charge(first.reservation, 'g', 10_000);
    // 10k settled + 50k and 1 held: room again.
    const third = await cap.reserve('g', DAY, 500_000);
    expect(third.ok).toBe(true);
    // Settling twice does not count twice.
    await charge(first.reservation, 'g', 10_000);
  });

  it('keeps each group and each day apart', async () => {
    const { cap, store } = makeCap(1);
    store.addSpend('g', DAY, 1_000_000);
    expect((await cap.reserve('g', DAY, 1)).ok).toBe(false);
    expect((await cap.reserve('other', DAY, 1)).ok).toBe(true);
    expect((await cap.reserve('g', '2024-03-12', 1)).ok).toBe(true);
  });

  it('reads the store again when a settlement overtook its read', async () => {
    const store = createMemoryUsageStore();
    // A store whose answers reflect the moment they were asked; the second read is held until the test
    // lets it go, after the settlement.
    let reads = 0;
    let releaseSecondRead!: () => void;
    const secondRead = new Promise<void>((resolve) => (releaseSecondRead = resolve));
    const slow = {
      spentTodayMicros: async (groupId: string, day: string) => {
        const value = await store.spentTodayMicros(groupId, day);
        if (++reads === 2) await secondRead;
        return value;
      },
    };
    const cap = createSpendCap({
      config: () => ({ daily_cap_usd: 1, group_caps_usd: {} }),
      usageStore: slow,
      onNotifyError: () => undefined,
    });
    const held = await cap.reserve('g', DAY, 1_000_000);
    if (!held.ok) throw new Error('should be admitted');
    // This read starts while nothing is settled and ends after the held request settled its full cost.
    const pending = cap.reserve('g', DAY, 1);
    await held.reservation.settle(() => {
      store.addSpend('g', DAY, 1_000_000);
      return 1_000_000;
    });
    releaseSecondRead();
    expect((await pending).ok).toBe(false);
  });
});

describe('the cap as its refusal names it', () => {
  it('shows a cap as the owner wrote it: whole cents in cents, smaller ones with their digits, never $0.00', () => {
    expect([5, 1.5, 0.01, 0.1, 0.07, 0.002, 0.005, 0.0125, 0.000001].map(capAsWritten)).toEqual([
      '5.00',
      '1.50',
      '0.01',
      '0.10',
      '0.07',
      '0.002',
      '0.005',
      '0.0125',
      '0.000001',
    ]);
    expect(spendCapMessage({ daily_cap_usd: 5, group_caps_usd: { family: 0.002 } }, 'family')).toBe(
      'daily spend cap of $0.002 reached for group family; raise [gateway].group_caps_usd."family" or wait until tomorrow',
    );
  });
});
