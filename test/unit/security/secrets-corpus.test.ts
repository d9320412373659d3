/**
 * The scanner against the project's corpus (test/fixtures/secret-corpus): credentials in every format it
 * claims, in the contexts people paste them, and hard look-alikes. `npm run bench` prints the same
 * figures per family, next to secretlint's recommended preset.
 */
import { describe, expect, it } from 'vitest';
import { createSecretScanner } from '../../../host/security/secrets/index.ts';
import { buildSecretCorpus } from '../../fixtures/secret-corpus/cases.ts';
import { scoreCorpus } from '../../fixtures/secret-corpus/score.ts';

// prettier-ignore
const REQUIRED_FAMILIES = [
  // detect-secrets' plugin set…
  'aws', 'azure', 'basic-auth', 'cloudant', 'discord', 'github', 'gitlab', 'ibm', 'jwt', 'keyword',
  'mailchimp', 'npm', 'openai', 'private-key', 'pypi', 'sendgrid', 'slack', 'softlayer', 'square',
  'stripe', 'telegram', 'twilio', 'base64', 'hex',
  // …and beyond it.
  'anthropic', 'google', 'gcp', 'huggingface', 'digitalocean', 'mailgun', 'shopify', 'linear', 'notion',
  'doppler', 'vault', 'grafana', 'database', 'url', 'curl', 'held',
];

describe('secret scanner on the corpus', () => {
  it('finds at least 95 % of the credentials and flags at most 5 % of the look-alikes', async () => {
    const corpus = buildSecretCorpus();
    const scanner = createSecretScanner({ heldSecrets: corpus.held });
    const score = await scoreCorpus(corpus, (text) => scanner.scan(text));
    expect(corpus.positives.length).toBeGreaterThanOrEqual(100);
    expect(corpus.negatives.length).toBeGreaterThanOrEqual(100);
    expect([...score.families.keys()]).toEqual(expect.arrayContaining(REQUIRED_FAMILIES));
    expect(score.recall, JSON.stringify(score.missed, null, 1)).toBeGreaterThanOrEqual(0.95);
    expect(score.falsePositiveRate, JSON.stringify(score.falsePositives, null, 1)).toBeLessThanOrEqual(0.05);
    // Every family is found at least once; a whole format missing would hide in the average.
    for (const [family, [found]] of score.families) expect(found, family).toBeGreaterThan(0);
    expect(score.leakyMessages).toEqual([]);
  });

  it('names its detector in every finding', async () => {
    const corpus = buildSecretCorpus();
    const scanner = createSecretScanner({ heldSecrets: corpus.held });
    for (const p of corpus.positives) {
      for (const f of await scanner.scan(p.text)) expect(f.rule).toMatch(/^[a-z0-9-]+(?:\/[a-z0-9-]+)+$/);
    }
  });
});
