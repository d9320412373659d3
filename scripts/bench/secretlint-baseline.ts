import { lintSource } from '@secretlint/core';
import { rules as recommendedRules } from '@secretlint/secretlint-rule-preset-recommend';
import { silenceSecretlintProfiler } from './secretlint-profiler.ts';

/**
 * The scanner Carapace used before host/security/secrets/: secretlint's recommended preset, configured as
 * it was (comment filter left out, AWS id rules on). Kept here only as the benchmark's baseline, for
 * speed and for recall on the corpus; secretlint is a dev dependency for that reason alone.
 */
export interface BaselineFinding {
  rule: string;
  message: string;
  start: number;
  end: number;
}

type CoreConfig = Parameters<typeof lintSource>[0]['options']['config'];

const FILTER_COMMENTS_RULE = '@secretlint/secretlint-rule-filter-comments';
const AWS_RULE = '@secretlint/secretlint-rule-aws';

export async function createSecretlintBaseline(): Promise<(text: string) => Promise<BaselineFinding[]>> {
  if (!(await silenceSecretlintProfiler())) throw new Error('could not turn off the secretlint profiler');
  const config: CoreConfig = {
    rules: recommendedRules
      .filter((rule) => rule.meta.id !== FILTER_COMMENTS_RULE)
      .map((rule) => ({
        id: rule.meta.id,
        rule,
        options: rule.meta.id === AWS_RULE ? { enableIDScanRule: true } : {},
      })),
  };
  return async (text) => {
    const ext = text.trimStart().startsWith('{') ? '.json' : '.txt';
    const result = await lintSource({
      source: { content: text, filePath: '', ext, contentType: 'text' },
      options: { config, maskSecrets: true, noPhysicFilePath: true, locale: 'en' },
    });
    return result.messages.map((m) => ({
      rule: `${m.ruleId}/${m.messageId}`,
      message: m.message,
      start: m.range[0],
      end: m.range[1],
    }));
  };
}
