import { lintSource } from '@secretlint/core';
import { rules as recommendedRules } from '@secretlint/secretlint-rule-preset-recommend';
import { createHeldSecretMatcher } from './secret-held-matcher.ts';
import { silenceSecretlintProfiler } from './secret-lint-profiler.ts';
import { findPrivateKeyBlocks } from './secret-private-key.ts';

/** One secret found in a text. Never carries the secret itself: `message` shows a masked value at most. */
export interface Finding {
  /**
   * `<secretlint rule>/<message id>` (e.g. `aws/AWSAccessKeyID`, `github/GITHUB_TOKEN`),
   * `held-secret/<encoding>`, `private-key/PrivateKeyBlock` (blocks secretlint misses), or `scanner/error`
   * (the pattern rules failed, so the whole text counts as a finding).
   */
  rule: string;
  message: string;
  /** UTF-16 offsets into the scanned text, end exclusive. */
  start: number;
  end: number;
}

export interface SecretScanner {
  /** Findings of secretlint's recommended rules, private-key blocks and held secrets, ordered by start. */
  scan(text: string): Promise<Finding[]>;
  /** Replaces held secrets (every encoding `scan` knows) with `[REDACTED]`; for logs and the audit table. */
  redact(text: string): string;
}

export interface SecretScannerLogger {
  warn(obj: object, msg: string): void;
}

export interface SecretScannerOptions {
  /** The real values the host holds; ones shorter than 8 characters are ignored (see secret-held-matcher). */
  heldSecrets: readonly string[];
  logger?: SecretScannerLogger;
}

type CoreConfig = Parameters<typeof lintSource>[0]['options']['config'];

const FILTER_COMMENTS_RULE = '@secretlint/secretlint-rule-filter-comments';
const AWS_RULE = '@secretlint/secretlint-rule-aws';
const RULE_PREFIX = '@secretlint/secretlint-rule-';

/**
 * The recommended rules, registered one by one rather than through the preset so that
 * `secretlint-rule-filter-comments` stays out: it honours `secretlint-disable` comments, and the text we
 * scan is written by the party we are checking, which could simply switch the scan off.
 * The AWS rule also reports access key ids and account ids (`enableIDScanRule`), off by default upstream.
 */
function buildConfig(): CoreConfig {
  return {
    rules: recommendedRules
      .filter((rule) => rule.meta.id !== FILTER_COMMENTS_RULE)
      .map((rule) => ({
        id: rule.meta.id,
        rule,
        options: rule.meta.id === AWS_RULE ? { enableIDScanRule: true } : {},
      })),
  };
}

const shortRuleId = (id: string) => (id.startsWith(RULE_PREFIX) ? id.slice(RULE_PREFIX.length) : id);

/** Masks the reported substring wherever it still shows in a rule's message (core masks only `data`). */
function maskMessage(message: string, secretText: string): string {
  return secretText.length >= 4 ? message.split(secretText).join('*'.repeat(secretText.length)) : message;
}

export function createSecretScanner(options: SecretScannerOptions): SecretScanner {
  const held = createHeldSecretMatcher(options.heldSecrets);
  // Built once: the rule list, the options and the profiler switch are shared by every scan. (lintSource
  // itself still calls each rule's cheap `create` per text; core has no API to reuse a rule context.)
  const config = buildConfig();
  let profilerSilenced: Promise<void> | undefined;
  const silenceProfilerOnce = () =>
    (profilerSilenced ??= silenceSecretlintProfiler().then(
      (ok) => {
        if (!ok)
          options.logger?.warn(
            {},
            'secret scanner: could not turn off the secretlint profiler; scans will slow down over time',
          );
      },
      (err: unknown) => {
        options.logger?.warn(
          { err: String(err) },
          'secret scanner: could not turn off the secretlint profiler',
        );
      },
    ));

  async function lint(text: string): Promise<Finding[]> {
    await silenceProfilerOnce();
    // The GCP rule reads service-account JSON only for the `.json` extension.
    const ext = text.trimStart().startsWith('{') ? '.json' : '.txt';
    const result = await lintSource({
      // An empty filePath keeps the file-name-dependent rules (npm) on for every text, and the p12 rule
      // from ever reading a file from disk.
      source: { content: text, filePath: '', ext, contentType: 'text' },
      options: { config, maskSecrets: true, noPhysicFilePath: true, locale: 'en' },
    });
    // Core drops a leading byte-order mark before matching; ranges are relative to what it kept.
    const shift = text.charCodeAt(0) === 0xfeff ? 1 : 0;
    return result.messages.map((m) => {
      const start = m.range[0] + shift;
      const end = m.range[1] + shift;
      return {
        rule: `${shortRuleId(m.ruleId)}/${m.messageId}`,
        message: held.redact(maskMessage(m.message, text.slice(start, end))),
        start,
        end,
      };
    });
  }

  return {
    async scan(text) {
      let findings: Finding[];
      try {
        findings = await lint(text);
      } catch (err) {
        // Fails closed: a text the rules could not check is reported as a finding, never as clean.
        const why = err instanceof Error ? err.message : String(err);
        options.logger?.warn(
          { err: why },
          'secret scanner: pattern rules failed; reporting the text as a finding',
        );
        findings = [
          {
            rule: 'scanner/error',
            message: 'the pattern rules failed on this text',
            start: 0,
            end: text.length,
          },
        ];
      }
      const keyFindings = findings.filter((f) => f.rule.startsWith('privatekey/'));
      for (const block of findPrivateKeyBlocks(text)) {
        const overlaps = keyFindings.some((f) => f.start < block.end && block.start < f.end);
        if (overlaps) continue;
        findings.push({
          rule: 'private-key/PrivateKeyBlock',
          message: `found a private key block (${block.label})`,
          start: block.start,
          end: block.end,
        });
      }
      for (const m of held.find(text)) {
        findings.push({
          rule: `held-secret/${m.encoding}`,
          message: `a secret the host holds appears here (${m.encoding})`,
          start: m.start,
          end: m.end,
        });
      }
      return findings.sort((a, b) => a.start - b.start || a.end - b.end);
    },
    redact: (text) => held.redact(text),
  };
}
