/**
 * `npm run bench:injection`: every injection scenario through one real host and real containers, once with
 * the Cop fooled (it passes everything) and once with the host's real Cop prompt answered by a keyword
 * matcher. Prints the goal × vector table of each and writes the score as JSON and Markdown to
 * `.tmp/injection-score/` (or the folder given with `--out`). `--only <text>` runs the scenarios whose id
 * contains it; `--cop fooled|keywords` one mode. Exits 1 when a goal was achieved with the Cop fooled.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import Docker from 'dockerode';
import type { CopMode } from '../../test/e2e/injection/attacker-model.ts';
import { createScenarioRunner, type ScenarioResult } from '../../test/e2e/injection/run-scenario.ts';
import { ALL_SCENARIOS } from '../../test/e2e/injection/scenarios.ts';
import { scoreTable, summarise, type InjectionScore } from '../../test/e2e/injection/score.ts';
import { startSuiteHost } from '../../test/e2e/injection/suite-host.ts';
import { PENDING_VECTORS } from '../../test/e2e/injection/vectors.ts';

const { values } = parseArgs({
  options: {
    out: { type: 'string', default: '.tmp/injection-score' },
    only: { type: 'string', multiple: true, default: [] },
    cop: { type: 'string', multiple: true, default: ['fooled', 'keywords'] },
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
const scenarios = ALL_SCENARIOS.filter(
  (s) => values.only.length === 0 || values.only.some((o) => s.id.includes(o)),
);
const modes = values.cop as CopMode[];
const score: InjectionScore = { modes: {}, pending: PENDING_VECTORS };
const started = Date.now();
const suite = await startSuiteHost();
console.log(
  `host up in ${Date.now() - started} ms; ${scenarios.length} scenarios × ${modes.length} Cop modes`,
);
try {
  const runner = createScenarioRunner(suite);
  for (const mode of modes) {
    const results: ScenarioResult[] = [];
    const t0 = Date.now();
    for (const s of scenarios) {
      const r = await runner.run(s, mode);
      results.push(r);
      console.log(`  [${mode}] ${r.id}: ${r.outcome} ${r.mechanisms.join('+')} (${r.ms} ms)`);
    }
    score.modes[mode] = { summary: summarise(results), results };
    console.log(
      `\nCop ${mode} (${((Date.now() - t0) / 1000).toFixed(0)} s):\n${scoreTable(results, PENDING_VECTORS)}\n`,
    );
  }
} finally {
  await suite.stop();
}
fs.mkdirSync(values.out, { recursive: true });
fs.writeFileSync(path.join(values.out, 'score.json'), `${JSON.stringify(score, null, 2)}\n`);
fs.writeFileSync(
  path.join(values.out, 'score.md'),
  modes
    .map((m) => `### Cop ${m}\n\n${scoreTable(score.modes[m]?.results ?? [], PENDING_VECTORS)}\n`)
    .join('\n'),
);
console.log(`wrote ${path.join(values.out, 'score.json')} and score.md`);
process.exit((score.modes.fooled?.summary.achieved.length ?? 0) > 0 ? 1 : 0);
