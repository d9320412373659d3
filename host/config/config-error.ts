/** One thing wrong with a configuration file, phrased so the user can fix it without reading code. */
export interface ConfigProblem {
  file: string;
  key: string;
  problem: string;
  example?: string;
}

export function formatProblem(p: ConfigProblem): string {
  const where = p.key ? `${p.file}: ${p.key}` : p.file;
  return `${where}: ${p.problem}${p.example ? ` (for example: ${p.example})` : ''}`;
}

export class ConfigError extends Error {
  constructor(readonly problems: ConfigProblem[]) {
    super(
      `The configuration has ${problems.length} problem${problems.length === 1 ? '' : 's'}:\n` +
        problems.map((p) => `  - ${formatProblem(p)}`).join('\n'),
    );
    this.name = 'ConfigError';
  }
}
