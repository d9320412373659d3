/**
 * `npm run bench:injection`: every injection scenario through one real host and real containers, for each
 * Cop mode (fooled: it passes everything; keywords: the host's real Cop prompt answered by a keyword
 * matcher) and each attacker tier (obedient: the goal's plain routes; adaptive: also the routes written
 * against the gate, the matrix and the Cop: races, link tricks, review flooding). Every scenario runs
 * `--repeat` times (3) and the worst run is scored. Prints the goal × vector table of each and writes the
 * score as JSON and Markdown to `.tmp/injection-score/` (or `--out`). `--only <text>` runs the scenarios
 * whose id contains it; `--cop fooled|keywords` and `--tier obedient|adaptive` one of each. Exits 1 when a
 * goal was achieved with the Cop fooled, in any tier.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import Docker from 'dockerode';
import type { CopMode } from '../../test/e2e/injection/attacker-model.ts';
import { createScenarioRunner, type ScenarioResult } from '../../test/e2e/injection/run-scenario.ts';
import type { AttackerTier } from '../../test/e2e/injection/scenario-types.ts';
import { ALL_SCENARIOS } from '../../test/e2e/injection/scenarios.ts';
import { scoreTable, summarise, worstOf, type InjectionScore } from '../../test/e2e/injection/score.ts';
import { startSuiteHost } from '../../test/e2e/injection/suite-host.ts';
import { PENDING_VECTORS } from '../../test/e2e/injection/vectors.ts';

const { values } = parseArgs({
  options: {
    out: { type: 'string', default: '.tmp/injection-score' },
    only: { type: 'string', multiple: true, default: [] },
    cop: { type: 'string', multiple: true, default: ['fooled', 'keywords'] },
    tier: { type: 'string', multiple: true, default: ['obedient', 'adaptive'] },
    repeat: { type: 'string', default: '3' },
  },
});

if (
  !(await new Docker().ping().then(
    () => true,
    () => false,
  ))
) {
  console.error('bench:injection needs a Docker engine; none answered');
  process.exit(2);
}
const repeats = Number(values.repeat);
if (!Number.isInteger(repeats) || repeats < 1) {
  console.error(`--repeat wants a whole number of runs, at least 1; got ${values.repeat}`);
  process.exit(2);
}
const scenarios = ALL_SCENARIOS.filter(
  (s) => values.only.length === 0 || values.only.some((o) => s.id.includes(o)),
);
const modes = values.cop as CopMode[];
const tiers = values.tier as AttackerTier[];
const score: InjectionScore = { runs: [], pending: PENDING_VECTORS };
const started = Date.now();
const suite = await startSuiteHost();
console.log(
  `host up in ${Date.now() - started} ms; ${scenarios.length} scenarios × ${modes.length} Cop modes × ` +
    `${tiers.length} tiers × ${repeats} runs`,
);
const title = (mode: CopMode, tier: AttackerTier) => `Cop ${mode}, ${tier} attacker (worst of ${repeats})`;
try {
  const runner = createScenarioRunner(suite);
  for (const mode of modes)
    for (const tier of tiers) {
      const results: ScenarioResult[] = [];
      const t0 = Date.now();
      for (const s of scenarios) {
        const runs: ScenarioResult[] = [];
        for (let i = 0; i < repeats; i += 1) {
          const r = await runner.run(s, mode, tier);
          runs.push(r);
          console.log(
            `  [${mode}/${tier} #${i + 1}] ${r.id}: ${r.outcome} ${r.mechanisms.join('+')} (${r.ms} ms)`,
          );
        }
        results.push(worstOf(runs));
      }
      score.runs.push({ cop: mode, tier, repeats, summary: summarise(results), results });
      console.log(
        `\n${title(mode, tier)} (${((Date.now() - t0) / 1000).toFixed(0)} s):\n${scoreTable(results, PENDING_VECTORS)}\n`,
      );
    }
} finally {
  await suite.stop();
}
fs.mkdirSync(values.out, { recursive: true });
fs.writeFileSync(path.join(values.out, 'score.json'), `${JSON.stringify(score, null, 2)}\n`);
fs.writeFileSync(
  path.join(values.out, 'score.md'),
  score.runs
    .map((r) => `### ${title(r.cop, r.tier)}\n\n${scoreTable(r.results, PENDING_VECTORS)}\n`)
    .join('\n'),
);
console.log(
  `wrote ${path.join(values.out, 'score.json')} and score.md; ${((Date.now() - started) / 1000).toFixed(0)} s in all`,
);
const fooledAchieved = score.runs.filter((r) => r.cop === 'fooled').flatMap((r) => r.summary.achieved);
process.exit(fooledAchieved.length > 0 ? 1 : 0);
