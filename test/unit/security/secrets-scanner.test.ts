import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { createSecretScanner, type Finding } from '../../../host/security/secrets/index.ts';
import { createRandom, tokenMakers } from '../../fixtures/secret-corpus/generate.ts';

// Every token below is made at run time, so this file holds nothing a secret scanner would flag.
const t = tokenMakers(createRandom(7));
const join = (...parts: string[]) => parts.join('');
const AWS_KEY_ID = t.awsKeyId();
const AWS_SECRET = t.awsSecret();
const GITHUB_TOKEN = t.githubClassic();
const SLACK_TOKEN = t.slackBot();
const HELD = join('sk-host-', randomBytes(20).toString('hex'));
// Mixed case and every letter, so case folding, ROT13 and look-alikes are tested on letters hex lacks.
const MIXED = join('Tg-', randomBytes(18).toString('base64url').replace(/[-_]/g, 'q'), 'XoPa');

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

const rulesAndText = (findings: Finding[], text: string) =>
  findings.map((f) => [f.rule, text.slice(f.start, f.end)]);

describe('secret scanner', () => {
  const scanner = createSecretScanner({ heldSecrets: [HELD] });

  it('finds AWS access key ids and secret access keys, with exact ranges', async () => {
    const text = `id ${AWS_KEY_ID}\naws_secret_access_key = "${AWS_SECRET}"\n`;
    const findings = await scanner.scan(text);
    expect(rulesAndText(findings, text)).toEqual([
      ['aws/access-key-id', AWS_KEY_ID],
      ['aws/secret-access-key', AWS_SECRET],
    ]);
    expectNoSecretInFindings(findings, AWS_KEY_ID, AWS_SECRET);
  });

  it('finds GitHub and Slack tokens, naming the detector and never quoting the token', async () => {
    const text = `deploy with ${GITHUB_TOKEN} then notify ${SLACK_TOKEN}.`;
    const findings = await scanner.scan(text);
    expect(rulesAndText(findings, text)).toEqual([
      ['github/pat-classic', GITHUB_TOKEN],
      ['slack/token', SLACK_TOKEN],
    ]);
    expect(findings[0]?.message).toBe('found a GitHub token (checksum valid)');
    expectNoSecretInFindings(findings, GITHUB_TOKEN, SLACK_TOKEN, GITHUB_TOKEN.slice(4, 20));
  });

  it('checks the CRC32 checksum of GitHub and npm tokens: a look-alike with a wrong one is not a token', async () => {
    const wrong = (token: string) => token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    expect(await scanner.scan(`token ${wrong(GITHUB_TOKEN)}`)).toEqual([]);
    expect(await scanner.scan(`token ${wrong(t.npm())}`)).toEqual([]);
    expect((await scanner.scan(`token ${t.npm()}`)).map((f) => f.rule)).toEqual(['npm/token']);
  });

  it('finds private key blocks of every kind, in text and inside JSON, and a key cut short', async () => {
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
        expect(
          findings.map((f) => f.rule),
          name,
        ).toEqual(['private-key/block']);
        const f = findings[0] as Finding;
        expect(text.slice(f.start, f.end), name).toMatch(/^-----BEGIN .*PRIVATE KEY-----$/s);
        expectNoSecretInFindings(findings, pem.split('\n')[1] as string);
      }
    }
    const cut = keys.rsaPkcs1.split('\n').slice(0, 5).join('\n');
    expect((await scanner.scan(`the start of it:\n${cut}\n…`)).map((f) => f.rule)).toEqual([
      'private-key/partial-block',
    ]);
  });

  it('pairs each END with the nearest BEGIN, so a stray BEGIN before a real key does not hide it', async () => {
    const ed = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    const text = `-----BEGIN PRIVATE KEY-----\n(cut)\n${ed}`;
    const findings = await scanner.scan(text);
    expect(findings.map((f) => [f.rule, f.start, f.end])).toEqual([
      ['private-key/block', text.indexOf(ed), text.indexOf(ed) + ed.trimEnd().length],
    ]);
  });

  it('does not flag a private key header with a placeholder body, or a public key', async () => {
    const doc =
      'Paste it like this:\n-----BEGIN PRIVATE KEY-----\nMIIE...your key here...\n-----END PRIVATE KEY-----\n';
    expect(await scanner.scan(doc)).toEqual([]);
    const pub = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }) as string;
    expect(await scanner.scan(pub)).toEqual([]);
  });

  it('finds keyword assignments in dotenv, YAML, JSON, code and flags, and skips references and placeholders', async () => {
    const pw = join('Vq7', 'rT2!', 'mZx9');
    const found = [
      `DB_PASSWORD=${pw}`,
      `db:\n  password: ${pw}\n`,
      `{"password": "${pw}"}`,
      JSON.stringify({ params: JSON.stringify({ password: pw }) }),
      `mysql --password=${pw}`,
      `conn = connect(passwd="${pw}")`,
      `Server=db;User Id=sa;Password=${pw};`,
    ];
    for (const text of found) {
      const findings = await scanner.scan(text);
      expect(rulesAndText(findings, text), text).toEqual([['keyword/password', pw]]);
    }
    const quiet = [
      'password: ${DB_PASSWORD}',
      'const token = process.env.GITHUB_TOKEN;',
      'api_key: "<your-api-key>"',
      'PASSWORD=changeme',
      'max_tokens = 4096',
      'password = get_password()',
      '"password": "********"',
      'the password is required',
    ];
    for (const text of quiet) expect(await scanner.scan(text), text).toEqual([]);
  });

  it('finds credentials in URLs, on curl command lines and in Basic headers, covering the password only', async () => {
    const pw = join('s3c', 'R9', 'xQw');
    const basic = Buffer.from(`ops:${pw}`).toString('base64');
    const cases: [string, string, string][] = [
      [`postgres://app:${pw}@db:5432/app`, 'database/connection-string', pw],
      [`https://deploy:${pw}@git.example.org/x.git`, 'url/credentials', pw],
      [`curl -u admin:${pw} https://ci.example.org`, 'basic-auth/curl-user', pw],
      [`curl -H "Authorization: Basic ${basic}" https://x.example.org`, 'basic-auth/header', basic],
    ];
    for (const [text, rule, secret] of cases) {
      expect(rulesAndText(await scanner.scan(text), text), text).toEqual([[rule, secret]]);
    }
    expect(await scanner.scan('docker run -u 1000:1000 node:20')).toEqual([]);
    expect(await scanner.scan('postgres://postgres:postgres@localhost/postgres')).toEqual([]);
  });

  it('decodes base64 and hex blobs and scans them again, naming the encoding', async () => {
    const b64 = Buffer.from(`export GITHUB_TOKEN=${GITHUB_TOKEN}\n`).toString('base64');
    const hex = Buffer.from(`token ${SLACK_TOKEN}`).toString('hex');
    const nested = Buffer.from(`payload: ${b64}`).toString('base64');
    expect((await scanner.scan(`echo ${b64} | base64 -d`)).map((f) => f.rule)).toEqual([
      'base64/github/pat-classic',
    ]);
    expect((await scanner.scan(`0x${hex}`)).map((f) => f.rule)).toEqual(['hex/slack/token']);
    expect((await scanner.scan(nested)).map((f) => f.rule)).toEqual(['base64/base64/github/pat-classic']);
    expect(await scanner.scan(`echo ${Buffer.from('hello world, nothing here').toString('base64')}`)).toEqual(
      [],
    );
  });

  it('reports text nested deeper than it decodes instead of passing it unread', async () => {
    const b64 = (x: string) => Buffer.from(x).toString('base64');
    const thrice = b64(`one: ${b64(`two: ${b64(`three: ${GITHUB_TOKEN}`)}`)}`);
    expect((await scanner.scan(thrice)).map((f) => f.rule)).toEqual(['base64/base64/base64/unscanned']);
  });

  it('stops judging after a bounded number of secret-named values and reports the rest as unread', async () => {
    const text = Array.from({ length: 2_100 }, (_, i) => `password="${i}"`).join('\n');
    const findings = await scanner.scan(text);
    expect(findings.map((f) => f.rule)).toEqual(['keyword/too-many']);
    expect(findings[0]?.end).toBe(text.length);
  });

  it('finds a held secret raw, base64, inside a larger base64 blob, url-encoded and hex', async () => {
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
      hex: `0x${Buffer.from(HELD).toString('hex')}`,
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

  it('finds a held secret split across lines, concatenated, or with separators between its characters', async () => {
    const hex = Buffer.from(HELD).toString('hex');
    const texts = {
      lines: `key = (\n  ${HELD.slice(0, 15)}\n  ${HELD.slice(15)}\n)`,
      concatenated: `const k = "${HELD.slice(0, 20)}" + "${HELD.slice(20)}";`,
      spaced: HELD.split('').join(' '),
      dashed: HELD.split('').join('-'),
      jsonBreak: JSON.stringify({ text: `${HELD.slice(0, 25)}\n${HELD.slice(25)}` }),
      hexColons: hex.match(/../g)?.join(':') ?? '',
      hexEscapes: (hex.match(/../g) ?? []).map((b) => `\\x${b}`).join(''),
    };
    for (const [name, text] of Object.entries(texts)) {
      const findings = await scanner.scan(text);
      expect(
        findings.map((f) => f.rule),
        name,
      ).toContainEqual(expect.stringMatching(/^held-secret\/(?:hex-)?spread$/));
      const f = findings.find((x) => x.rule.startsWith('held-secret/')) as Finding;
      expect(f.end - f.start, name).toBeGreaterThanOrEqual(HELD.length);
    }
  });

  it('finds a held secret in disguise: format characters, marks, case, look-alikes, reversed, ROT13, base32, char codes, gzip and deflate', async () => {
    const disguised = createSecretScanner({ heldSecrets: [MIXED] });
    const bytes = Buffer.from(MIXED);
    const rot13 = (x: string) =>
      x.replace(/[a-z]/gi, (c) => {
        const base = c <= 'Z' ? 65 : 97;
        return String.fromCharCode(((c.charCodeAt(0) - base + 13) % 26) + base);
      });
    const cyrillic: Record<string, string> = {
      a: '\u0430',
      o: '\u043e',
      p: '\u0440',
      X: '\u0425',
      T: '\u0422',
    };
    const base32 = (b: Buffer) => {
      let bits = '';
      for (const x of b) bits += x.toString(2).padStart(8, '0');
      return (bits.match(/.{1,5}/g) ?? [])
        .map((g) => 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'[parseInt(g.padEnd(5, '0'), 2)])
        .join('');
    };
    const cases: Record<string, [string, RegExp]> = {
      zeroWidth: [MIXED.split('').join('\u200b'), /^held-secret\/spread$/],
      bidiMarks: [MIXED.split('').join('\u200e\u202d'), /^held-secret\/spread$/],
      combining: [MIXED.split('').join('\u0336'), /^held-secret\/spread$/],
      upper: [MIXED.toUpperCase(), /^held-secret\/spread$/],
      lower: [MIXED.toLowerCase(), /^held-secret\/spread$/],
      lookAlikes: [MIXED.replace(/[aopXT]/g, (c) => cyrillic[c] ?? c), /^held-secret\/spread$/],
      fullwidth: [
        MIXED.replace(/[!-~]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0)),
        /^held-secret\/spread$/,
      ],
      reversed: [[...MIXED].reverse().join(''), /^held-secret\/reversed$/],
      rot13: [rot13(MIXED), /^held-secret\/rot13$/],
      base32: [base32(bytes), /^held-secret\/base32$/],
      base32InBlob: [base32(Buffer.concat([randomBytes(3), bytes, randomBytes(2)])), /^held-secret\/base32$/],
      wrappedBase64: [bytes.toString('base64').replace(/.{10}/g, '$&\n'), /^held-secret\/base64-spread$/],
      charCodes: [`[${[...bytes].join(', ')}]`, /^held-secret\/char-codes$/],
      htmlEntities: [[...bytes].map((b) => `&#${b};`).join(''), /^held-secret\/char-codes$/],
      unicodeEscapes: [[...bytes].map((b) => `\\u00${b.toString(16)}`).join(''), /^held-secret\/hex-spread$/],
      gzip: [gzipSync(bytes).toString('base64'), /^gzip-base64\/held-secret\/raw$/],
      zlib: [deflateSync(`key=${MIXED}`).toString('base64'), /^deflate-base64\/held-secret\/raw$/],
      rawDeflate: [deflateRawSync(bytes).toString('base64'), /^deflate-base64\/held-secret\/raw$/],
    };
    for (const [name, [disguise, rule]] of Object.entries(cases)) {
      const text = `look: ${disguise} (done)`;
      const findings = await disguised.scan(text);
      expect(
        findings.map((f) => f.rule),
        name,
      ).toContainEqual(expect.stringMatching(rule));
      const f = findings.find((x) => rule.test(x.rule)) as Finding;
      // The finding lies on the disguise, in the original text's offsets (an encoded secret's first and
      // last characters may mix in its neighbours' bits, so they can be left out).
      const at = text.indexOf(disguise);
      expect(f.start, name).toBeGreaterThanOrEqual(at);
      expect(f.end, name).toBeLessThanOrEqual(at + disguise.length);
      expect(f.end - f.start, name).toBeGreaterThan(disguise.length * 0.8);
      expectNoSecretInFindings(findings, MIXED);
    }
  });

  it('reports gzip data that inflates past the cap as unread instead of inflating it all', async () => {
    const bomb = gzipSync(Buffer.alloc(8 * 1024 * 1024, 'a')).toString('base64');
    expect((await scanner.scan(`x ${bomb}`)).map((f) => f.rule)).toEqual(['gzip-base64/unscanned']);
  });

  it('reports nothing for ordinary prose, code, random base64 or an empty text', async () => {
    expect(await scanner.scan(PROSE)).toEqual([]);
    expect(await scanner.scan(CODE)).toEqual([]);
    expect(await scanner.scan(randomBytes(1500).toString('base64'))).toEqual([]);
    expect(await scanner.scan('')).toEqual([]);
  });

  it('cannot be switched off by an allowlist comment in the scanned text', async () => {
    for (const pragma of ['// secretlint-disable', '# pragma: allowlist secret', '// gitleaks:allow']) {
      const text = `${pragma}\n${SLACK_TOKEN} ${pragma}`;
      expect((await scanner.scan(text)).map((f) => f.rule)).toEqual(['slack/token']);
    }
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
});
