import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { createSecretScanner, type Finding } from '../../host/security/secret-scanner.ts';

// Every token below is assembled at run time, so this file holds nothing a secret scanner would flag.
const join = (...parts: string[]) => parts.join('');
const AWS_KEY_ID = join('AKIA', 'QX7Z2L4M9N3P5R8T');
const AWS_SECRET = join('Zx9kQ2mN4pR7sT1v', 'W3yA5bC8dE0fG6hJ2kL4mN7p');
const GITHUB_TOKEN = join('ghp', '_', 'Ab3dEf6hIj9lMn2pQr5tUv8xYz1bCd4fGh7j');
const SLACK_TOKEN = join('xox', 'b-', '123456789012-1234567890123-', 'abcdefghijklmnopqrstuvwx');
const HELD = join('sk-host-', randomBytes(20).toString('hex'));

const PROSE = `Hi team! The quarterly report is ready. Revenue grew 12% to 4.5 million, and we hired 7 people.
Please review the draft by Friday 3 pm; call me at +1 555 0100 if anything is unclear. Meeting room B,
order #123456789012, ticket ABC-1234. The password policy says: use a manager, never write passwords down.`;

const CODE = `import { createHash } from 'node:crypto';
export async function load(url: string, token = process.env.API_TOKEN) {
  const res = await fetch(\`https://api.example.com/v1/items?id=\${encodeURIComponent(url)}\`, {
    headers: { Authorization: \`Bearer \${token}\` },
  });
  const id = '123e4567-e89b-12d3-a456-426614174000';
  const digest = createHash('sha256').update('hello').digest('hex'); // 2cf24dba5fb0a30e26e83b2ac5b9e29e
  const md5 = 'd41d8cd98f00b204e9800998ecf8427e';
  const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
  const secretKey = process.env.SECRET_KEY ?? '';
  return { res, id, digest, md5, png, secretKey };
}`;

function expectNoSecretInFindings(findings: Finding[], ...secrets: string[]) {
  const json = JSON.stringify(findings);
  for (const s of secrets) expect(json).not.toContain(s);
}

describe('secret scanner', () => {
  const scanner = createSecretScanner({ heldSecrets: [HELD] });

  it('finds AWS access key ids, secret access keys and account ids', async () => {
    const text = `id ${AWS_KEY_ID}\naws_secret_access_key = "${AWS_SECRET}"\naws_account_id: 1234-5678-9012\n`;
    const findings = await scanner.scan(text);
    expect(findings.map((f) => f.rule)).toEqual([
      'aws/AWSAccessKeyID',
      'aws/AWSSecretAccessKey',
      'aws/AWSAccountID',
    ]);
    const keyId = findings[0] as Finding;
    expect(text.slice(keyId.start, keyId.end)).toBe(AWS_KEY_ID);
    expectNoSecretInFindings(findings, AWS_KEY_ID, AWS_SECRET, '1234-5678-9012');
  });

  it('finds GitHub and Slack tokens, with their exact ranges and masked messages', async () => {
    const text = `deploy with ${GITHUB_TOKEN} then notify ${SLACK_TOKEN}.`;
    const findings = await scanner.scan(text);
    expect(findings.map((f) => [f.rule, text.slice(f.start, f.end)])).toEqual([
      ['github/GITHUB_TOKEN', GITHUB_TOKEN],
      ['slack/SLACK_TOKEN', SLACK_TOKEN],
    ]);
    expect(findings[0]?.message).toMatch(/^found GitHub Token.*\*{8,}/);
    expectNoSecretInFindings(findings, GITHUB_TOKEN, SLACK_TOKEN, GITHUB_TOKEN.slice(4));
  });

  it('finds private key blocks: RSA, PKCS#8, and the ones secretlint misses (Ed25519, SEC1 P-256, encrypted)', async () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey;
    const keys = {
      rsaPkcs1: rsa.export({ type: 'pkcs1', format: 'pem' }) as string,
      rsaPkcs8: rsa.export({ type: 'pkcs8', format: 'pem' }) as string,
      ed25519: generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
      ecSec1: generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({
        type: 'sec1',
        format: 'pem',
      }) as string,
      encrypted: rsa.export({
        type: 'pkcs1',
        format: 'pem',
        cipher: 'aes-128-cbc',
        passphrase: 'pw',
      }) as string,
    };
    for (const [name, pem] of Object.entries(keys)) {
      for (const text of [`here it is:\n${pem}`, JSON.stringify({ private_key: pem })]) {
        const findings = await scanner.scan(text);
        expect(findings.length, name).toBe(1);
        const f = findings[0] as Finding;
        expect(f.rule, name).toMatch(/^privatekey\/|^private-key\//);
        expect(text.slice(f.start, f.end), name).toContain('PRIVATE KEY-----');
        expectNoSecretInFindings(findings, pem.split('\n')[1] as string);
      }
    }
  });

  it('pairs each END with the nearest BEGIN, so a stray BEGIN before a real key does not hide it', async () => {
    const ed = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    const text = `-----BEGIN PRIVATE KEY-----\n(cut)\n${ed}`;
    const findings = await scanner.scan(text);
    expect(findings.map((f) => [f.rule, f.start, f.end])).toEqual([
      ['private-key/PrivateKeyBlock', text.indexOf(ed), text.indexOf(ed) + ed.trimEnd().length],
    ]);
  });

  it('does not flag a private key header with a placeholder body', async () => {
    const doc =
      'Paste it like this:\n-----BEGIN PRIVATE KEY-----\nMIIE...your key here...\n-----END PRIVATE KEY-----\n';
    expect(await scanner.scan(doc)).toEqual([]);
  });

  it('finds a held secret raw, base64, inside a larger base64 blob, and url-encoded', async () => {
    const blob = Buffer.concat([
      randomBytes(301),
      Buffer.from(`Authorization: ${HELD}`),
      randomBytes(77),
    ]).toString('base64');
    const texts = {
      raw: `the key is ${HELD}!`,
      base64: `Basic ${Buffer.from(HELD).toString('base64')}`,
      blob: `payload=${blob}`,
      url: `https://evil.example/?k=${encodeURIComponent(`${HELD}/x y`)}`,
    };
    for (const [name, text] of Object.entries(texts)) {
      const findings = await scanner.scan(text);
      expect(
        findings.map((f) => f.rule),
        name,
      ).toContainEqual(expect.stringMatching(/^held-secret\//));
      expectNoSecretInFindings(findings, HELD);
    }
  });

  it('reports nothing for ordinary prose, code, random base64 or an empty text', async () => {
    expect(await scanner.scan(PROSE)).toEqual([]);
    expect(await scanner.scan(CODE)).toEqual([]);
    expect(await scanner.scan(randomBytes(1500).toString('base64'))).toEqual([]);
    expect(await scanner.scan('')).toEqual([]);
  });

  it('cannot be switched off by a secretlint-disable comment in the scanned text', async () => {
    const text = `// secretlint-disable\n${SLACK_TOKEN}\n// secretlint-enable`;
    expect((await scanner.scan(text)).map((f) => f.rule)).toEqual(['slack/SLACK_TOKEN']);
  });

  it('keeps ranges right after a leading byte-order mark', async () => {
    const text = `\uFEFFtoken ${GITHUB_TOKEN}`;
    const [f] = await scanner.scan(text);
    expect(f && text.slice(f.start, f.end)).toBe(GITHUB_TOKEN);
  });

  it('redacts held secrets synchronously and leaves other text alone', () => {
    const line = `{"msg":"upstream call","key":"${HELD}","b64":"${Buffer.from(HELD).toString('base64')}"}`;
    expect(scanner.redact(line)).toBe('{"msg":"upstream call","key":"[REDACTED]","b64":"[REDACTED]"}');
    expect(scanner.redact(PROSE)).toBe(PROSE);
  });

  it('leaves no profiler marks behind (secretlint 11 would otherwise slow down with every scan)', async () => {
    performance.clearMarks();
    for (let i = 0; i < 20; i++) await scanner.scan(`${PROSE} ${i}`);
    const marks = performance.getEntriesByType('mark').filter((m) => m.name.startsWith('@core>'));
    expect(marks).toEqual([]);
  });
});
