import { charClasses, looksHandTyped, shannonEntropy } from './entropy.ts';
import type { Hit } from './finding.ts';
import { isNotASecret } from './placeholders.ts';

/**
 * Values assigned to a name that says "secret": `PASSWORD=…` in dotenv, `password: …` in YAML,
 * `"api_key": "…"` in JSON (also JSON inside a JSON string, as service parameters are scanned),
 * `token = "…"` in TOML and code, `setPassword("…")`, `<password>…</password>`, `--password …` and
 * `--token=…` on a command line, `Authorization: Bearer …`, and prose such as "the password is …".
 *
 * The name decides whether to look; the value decides whether to report. Names are split into words
 * (snake, kebab, dotted, camelCase); the last word must be a secret noun (password, secret, token, …) or
 * `key` qualified by what it opens (api, access, private, signing, a provider's name), and no word may
 * say the value is about the secret rather than the secret (`max_tokens`, `token_url`, `next_token`,
 * `password_hash`). Values that are references, placeholders, redacted, plain words, identifiers, paths,
 * numbers or low in entropy are not reported: this is also where detect-secrets' hex and base64
 * high-entropy strings are judged, since a bare hex string is as likely a digest as a key.
 */

const TRIGGER = /pass|pwd|secret|token|key|auth|credential|creds|bearer|dsn/gi;

// prettier-ignore
const SECRET_NOUNS = new Set([
  'password', 'passwd', 'passwort', 'pass', 'pwd', 'passphrase', 'passcode', 'secret', 'token', 'apikey',
  'credential', 'credentials', 'creds', 'auth', 'authorization', 'bearer', 'dsn', 'pat', 'privatekey',
  'accesskey', 'secretkey', 'authtoken', 'accesstoken', 'apitoken', 'refreshtoken', 'clientsecret',
  'sessionkey', 'signingkey', 'encryptionkey', 'masterkey', 'botkey', 'bottoken', 'apisecret',
]);

/** What may qualify a bare `key` as a secret one; `cache_key`, `sort_key`, `public_key` stay quiet. */
// prettier-ignore
const KEY_QUALIFIERS = new Set([
  'api', 'access', 'secret', 'private', 'auth', 'signing', 'sign', 'encryption', 'encrypt', 'master',
  'client', 'app', 'application', 'account', 'service', 'webhook', 'license', 'licence', 'session',
  'subscription', 'consumer', 'storage', 'shared', 'admin', 'hmac', 'deploy', 'jwt', 'ssh', 'gpg', 'pgp',
  'aes', 'crypto', 'cipher', 'root', 'write', 'management', 'sas', 'bot', 'integration', 'openai',
  'anthropic', 'stripe', 'sendgrid', 'mailgun', 'twilio', 'google', 'gcp', 'aws', 'azure', 'github',
  'gitlab', 'slack', 'datadog', 'dd', 'algolia', 'pusher', 'firebase', 'supabase', 'mapbox', 'segment',
  'mixpanel', 'sentry', 'cloudflare', 'heroku', 'hf', 'huggingface', 'groq', 'mistral', 'cohere', 'gemini',
  'brave', 'serpapi', 'tavily', 'exa', 'pinecone', 'resend', 'postmark', 'openrouter', 'deepseek',
  'together', 'fireworks', 'replicate', 'elevenlabs', 'linear', 'notion', 'airtable', 'langsmith', 'wandb',
]);

/** Words that make the name about the secret, or about something else that is not secret. */
// prettier-ignore
const NOT_THE_SECRET = new Set([
  'url', 'uri', 'urls', 'endpoint', 'name', 'names', 'type', 'types', 'id', 'ids', 'count', 'length', 'len',
  'size', 'file', 'files', 'path', 'paths', 'dir', 'policy', 'hint', 'field', 'label', 'prompt', 'ref',
  'refs', 'env', 'var', 'variable', 'header', 'manager', 'store', 'max', 'min', 'limit', 'limits', 'expires',
  'expiry', 'expiration', 'ttl', 'timeout', 'lifetime', 'duration', 'version', 'format', 'kind', 'mode',
  'enabled', 'enable', 'disabled', 'required', 'provider', 'method', 'scope', 'scopes', 'usage', 'used',
  'cost', 'budget', 'prefix', 'suffix', 'location', 'rotation', 'reset', 'hash', 'hashed', 'digest',
  'regex', 'pattern', 'validation', 'strength', 'placeholder', 'description', 'help', 'title', 'text',
  'input', 'button', 'error', 'message', 'changed', 'date', 'time', 'updated', 'created', 'mask', 'visible',
  'visibility', 'toggle', 'icon', 'form', 'column', 'param', 'parameter', 'arg', 'schema', 'uid', 'index',
  'lookup', 'generator', 'factory', 'handler', 'callback', 'fn', 'func', 'function', 'class', 'module',
  'util', 'utils', 'helper', 'validator', 'request', 'response', 'status', 'state', 'flow', 'grant',
  'issuer', 'audience', 'public', 'publishable', 'next', 'page', 'continuation', 'pagination', 'cursor',
  'idempotency', 'cancellation', 'csrf', 'xsrf', 'num', 'total', 'is', 'has', 'use', 'show', 'hide',
  'forgot', 'no', 'without', 'cache', 'sort', 'partition', 'primary', 'foreign', 'unique', 'composite',
  'tokens', 'secrets', 'keys', 'passwords', 'fingerprint', 'rotate', 'rotated', 'last', 'old', 'author',
  'keyboard', 'tokenizer', 'tokenize', 'tokenized', 'keyword', 'keywords', 'passed', 'passing', 'bypass',
  'compass', 'passenger', 'secretary', 'authors', 'authority', 'oauth2', 'template', 'example', 'sample',
]);

const KEY_WORDS = new Set(['key', 'apikey', 'privatekey', 'accesskey', 'secretkey']);

/** Trailing words that name a form or an instance of the secret (`SECRET_KEY_BASE`, `API_KEY_PROD`). */
// prettier-ignore
const FORM_SUFFIXES = new Set([
  'base', 'value', 'str', 'string', 'b64', 'base64', 'hex', 'raw', 'bytes', 'prod', 'production', 'dev',
  'staging', 'live', 'test', 'v1', 'v2', 'v3', '1', '2', 'new', 'current', 'primary', 'secondary',
]);

/** Splits `AWS_SECRET_ACCESS_KEY`, `api-key`, `db.password`, `clientSecret`, `X-Api-Key` into words. */
function words(identifier: string): string[] {
  return identifier
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[\s_.\-[\]]+/)
    .filter((w) => w !== '');
}

/** The keyword a finding is named after, or undefined when the name is not a secret's. */
function secretKind(allWords: readonly string[]): string | undefined {
  let ws = allWords;
  while (ws.length > 1 && FORM_SUFFIXES.has(ws[ws.length - 1] as string)) ws = ws.slice(0, -1);
  if (ws.length === 0 || ws.some((w) => NOT_THE_SECRET.has(w))) return undefined;
  const last = ws[ws.length - 1] as string;
  const prev = ws[ws.length - 2];
  if (last === 'key' && !(prev !== undefined && KEY_QUALIFIERS.has(prev))) return undefined;
  // `pgpassword`, `smtppass`… written as one word: the noun is its end.
  const isNoun = SECRET_NOUNS.has(last) || /.(?:password|passwd|passphrase|secret|token|apikey)$/.test(last);
  if (!isNoun && last !== 'key') return undefined;
  if (ws.some((w) => /pass|pwd/.test(w))) return 'password';
  if (ws.some((w) => w === 'auth' || w === 'authorization' || w === 'bearer')) return 'auth';
  if (ws.some((w) => w.includes('token') || w === 'pat')) return 'token';
  if (ws.some((w) => w.includes('secret'))) return 'secret';
  if (ws.some((w) => KEY_WORDS.has(w) || w.endsWith('key'))) return 'api-key';
  if (ws.some((w) => w.startsWith('cred'))) return 'credential';
  return last;
}

function isIdentChar(c: number): boolean {
  return (
    (c >= 0x61 && c <= 0x7a) ||
    (c >= 0x41 && c <= 0x5a) ||
    (c >= 0x30 && c <= 0x39) ||
    c === 0x5f ||
    c === 0x2e ||
    c === 0x2d
  );
}

/**
 * Cheap first look after a name: what could follow it in an assignment (an operator, a quote closing a
 * JSON key, `(`, `>`, or a space before a flag's or a sentence's value). Most names in prose fail here.
 */
function mayAssign(text: string, at: number, flag: boolean): boolean {
  const c = text.charCodeAt(at);
  if (c === 0x20 || c === 0x09) {
    if (flag) return true;
    // A sentence with words between the name and its value: "the root password for staging is …".
    if (/^[^\n:=]{1,40}?\s(?:is|was):?\s/.test(text.slice(at, at + 50))) return true;
    let i = at;
    while (text.charCodeAt(i) === 0x20 || text.charCodeAt(i) === 0x09) i++;
    const d = text.charCodeAt(i);
    // An operator after spaces, a sentence ("… is …"), or a credential after an auth scheme word.
    return (
      d === 0x3d ||
      d === 0x3a ||
      /^(?:is|was|are)\s/.test(text.slice(i, i + 4)) ||
      /bearer$|^bot$/i.test(text.slice(at - 6, at))
    );
  }
  return (
    c === 0x3d ||
    c === 0x3a ||
    c === 0x22 ||
    c === 0x27 ||
    c === 0x60 ||
    c === 0x5c ||
    c === 0x28 ||
    c === 0x3e ||
    c === 0x5d
  );
}
const QUOTES = new Set(['"', "'", '`']);
const UNQUOTED_END = /[\s,;"'`})\]<>&\\|]/;
const MAX_VALUE = 512;
const AUTH_SCHEMES = /^(?:Bearer|Token|Bot|Basic|Digest|token|bearer|Bot|OAuth|SSWS|ApiKey|Api-Key|Key)\s+/;

interface Value {
  start: number;
  end: number;
  quoted: boolean;
}

function readValue(text: string, at: number): Value | undefined {
  let i = at;
  let close: string | undefined;
  if (text[i] === '\\' && QUOTES.has(text[i + 1] ?? '')) {
    close = `\\${text[i + 1]}`;
    i += 2;
  } else if (QUOTES.has(text[i] ?? '')) {
    close = text[i];
    i += 1;
  }
  if (close !== undefined) {
    const limit = Math.min(text.length, i + MAX_VALUE);
    for (let j = i; j < limit; j++) {
      if (text.startsWith(close, j) && (close.length === 2 || text[j - 1] !== '\\')) {
        return { start: i, end: j, quoted: true };
      }
      if (text[j] === '\n') break;
    }
    return undefined;
  }
  let j = i;
  const limit = Math.min(text.length, i + MAX_VALUE);
  while (j < limit && !UNQUOTED_END.test(text[j] as string)) j++;
  while (j > i && /[.:!?]/.test(text[j - 1] as string)) j--;
  return j > i ? { start: i, end: j, quoted: false } : undefined;
}

/** Where the value starts after the name ending at `at`, or -1 when no assignment follows. */
function valueStart(text: string, at: number, flag: boolean, prose: boolean, spaced = false): number {
  let i = at;
  if (text[i] === '\\' && QUOTES.has(text[i + 1] ?? '')) i += 2;
  else if (QUOTES.has(text[i] ?? '') || text[i] === ']') i += 1;
  const afterName = i;
  while (text[i] === ' ' || text[i] === '\t') i++;
  const hasSpace = i > afterName;
  if (text.startsWith(':=', i) || text.startsWith('=>', i)) i += 2;
  else if (text[i] === '=' && text[i + 1] !== '=') i += 1;
  else if (text[i] === ':' && text[i + 1] !== ':') i += 1;
  else if (text[i] === '(' && (QUOTES.has(text[i + 1] ?? '') || text[i + 1] === '\\')) return i + 1;
  else if ((flag || spaced) && hasSpace) return i;
  else if (prose && hasSpace && /^(?:is|was|are)\s/.test(text.slice(i, i + 4))) i = text.indexOf(' ', i) + 1;
  else return -1;
  while (text[i] === ' ' || text[i] === '\t') i++;
  return i;
}

function acceptable(value: string, quoted: boolean): boolean {
  if (value.length < 6 || value.length > MAX_VALUE || /\s/.test(value)) return false;
  if (isNotASecret(value)) return false;
  if (/^[0-9]+$/.test(value)) return false;
  if (/^(?:\/|\.{1,2}\/|~\/|[A-Za-z]:\\|file:|https?:\/\/|[a-z][a-z0-9+.-]*:\/\/)/.test(value)) return false;
  if (/^[\w.-]+\.(?:pem|key|json|txt|env|crt|cer|p12|pfx|ya?ml|toml|ini|cfg|conf|jks|keystore)$/i.test(value))
    return false;
  if (/^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/.test(value)) return false; // an environment variable's name
  if (/^\{[A-Za-z_][\w.]*\}$|^%\(?\w*\)?s$|^:[A-Za-z_]\w*$/.test(value)) return false; // format slots
  if (value.includes('(')) return false;
  const c = charClasses(value);
  if (!c.digit && !c.other) {
    // Letters only: a word or an identifier unless it is long and random-looking.
    if (!quoted || value.length < 16 || shannonEntropy(value) < 3.5) return false;
  }
  if (!quoted && /^[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$/.test(value)) return false; // a.b.c
  if (shannonEntropy(value) < 2.5 || looksHandTyped(value)) return false;
  return true;
}

/** For values found without an operator: long enough, mixed, random-looking. */
function looksGenerated(value: string): boolean {
  const c = charClasses(value);
  return value.length >= 8 && c.digit && (c.lower || c.upper) && shannonEntropy(value) >= 3;
}

/**
 * Passwords handed over without a `password` name: `requests.get(…, auth=("user", "…"))`, .NET
 * `<add key="ApiKey" value="…"/>`, and tools' own short flags (`redis-cli -a …`, `sshpass -p …`,
 * `mysql -p…`).
 */
const AUTH_TUPLE = /\bauth\s*=\s*\(\s*["'][^"'\n]{1,100}["']\s*,\s*["']([^"'\n]{1,200})["']\s*\)/g;
const ADD_KEY_VALUE = /\bkey\s*=\s*["']([\w.:-]{1,100})["']\s+value\s*=\s*["']([^"'\n]{1,500})["']/g;
const TOOL_FLAG =
  /\b(?:redis-cli\b[^\n]{0,200}?\s-a|sshpass\b[^\n]{0,200}?\s-p|mysql(?:dump|admin)?\b[^\n]{0,200}?\s-p(?=[^\s-]))\s*(["']?)([^\s"']{1,200})\1/g;

export function findPasswordArguments(text: string): Hit[] {
  const hits: Hit[] = [];
  const add = (m: RegExpMatchArray, group: number, name: string, quoted: boolean) => {
    const value = m[group] as string;
    if (!acceptable(value, quoted)) return;
    const start = (m.index ?? 0) + m[0].lastIndexOf(value);
    hits.push({
      rule: 'keyword/password',
      message: `found a password given as ${name}`,
      start,
      end: start + value.length,
    });
  };
  if (text.includes('auth'))
    for (const m of text.matchAll(AUTH_TUPLE)) add(m, 1, 'auth=(user, password)', true);
  if (text.includes('value')) {
    for (const m of text.matchAll(ADD_KEY_VALUE)) {
      if (secretKind(words(m[1] as string)))
        add(m, 2, `the value of "${(m[1] as string).slice(0, 60)}"`, true);
    }
  }
  if (/redis-cli|sshpass|mysql/.test(text))
    for (const m of text.matchAll(TOOL_FLAG)) add(m, 2, 'a command-line flag', false);
  return hits;
}

/**
 * Values judged per text at most. Judging one costs a few microseconds; a text written to be slow (tens
 * of thousands of `password=x`) would otherwise hold the host's event loop. Past the limit the rest of
 * the text is reported rather than read: fails closed.
 */
const MAX_VALUES_JUDGED = 2_000;

export function findKeywordAssignments(text: string): Hit[] {
  const hits: Hit[] = [];
  let doneTo = -1;
  let judged = 0;
  TRIGGER.lastIndex = 0;
  for (let m = TRIGGER.exec(text); m !== null; m = TRIGGER.exec(text)) {
    if (m.index < doneTo) continue;
    let l = m.index;
    let r = m.index + m[0].length;
    while (l > 0 && isIdentChar(text.charCodeAt(l - 1))) l--;
    while (r < text.length && isIdentChar(text.charCodeAt(r))) r++;
    doneTo = r;
    TRIGGER.lastIndex = r;
    const flag = text.charCodeAt(l) === 0x2d && (l === 0 || /\s/.test(text[l - 1] as string));
    const name = text.slice(l, r).replace(/^-+/, '');
    // `aws configure set aws_secret_access_key …`: a multi-word name, a space, a value (judged strictly).
    const spaced = /[a-z0-9][_-][a-z0-9]/i.test(name) && (text[r] === ' ' || text[r] === '\t');
    if (!spaced && !mayAssign(text, r, flag)) continue;
    let ws = words(name);
    let kind = secretKind(ws);
    // "the API key is …", "access token: …": a two-word name in prose.
    if (!kind && ws.length === 1 && text[l - 1] === ' ') {
      let p = l - 1;
      while (p > 0 && /[A-Za-z]/.test(text[p - 1] as string)) p--;
      ws = [...words(text.slice(p, l - 1)), ...ws];
      kind = secretKind(ws);
    }
    if (!kind) continue;
    const xml = text[l - 1] === '<' && text[r] === '>';
    let at = xml ? r + 1 : valueStart(text, r, flag || kind === 'auth', ws.length <= 2, spaced);
    let strict = spaced && at >= 0 && !/[=:]/.test(text.slice(r, at));
    if (at < 0 && ws.length <= 2) {
      const between = /^[^\n:=]{1,40}?\s(?:is|was):?\s+/.exec(text.slice(r, r + 60));
      if (between) {
        at = r + between[0].length;
        strict = true;
      }
    }
    if (at < 0) continue;
    if (kind === 'auth') {
      const scheme = AUTH_SCHEMES.exec(text.slice(at, at + 12));
      if (scheme) at += scheme[0].length;
    }
    if (++judged > MAX_VALUES_JUDGED) {
      hits.push({
        rule: 'keyword/too-many',
        message: `more than ${MAX_VALUES_JUDGED} secret-named assignments; the rest of the text was not read`,
        start: l,
        end: text.length,
      });
      break;
    }
    const v = readValue(text, at);
    if (!v) continue;
    // A value is read once: names inside it (`arn:…:secret:…`) do not start another assignment.
    doneTo = v.end;
    TRIGGER.lastIndex = v.end;
    if (xml && !text.startsWith('</', v.end)) continue;
    // `"Authorization": "Token …"`: the scheme is inside the quotes.
    const scheme = kind === 'auth' && v.quoted ? AUTH_SCHEMES.exec(text.slice(v.start, v.end)) : null;
    if (scheme) v.start += scheme[0].length;
    const value = text.slice(v.start, v.end);
    if (/^(?:\.{3}|…)/.test(text.slice(v.end, v.end + 3))) continue; // `sk_live_...`: elided
    if (!acceptable(value, v.quoted)) continue;
    if (strict && !looksGenerated(value)) continue;
    hits.push({
      rule: `keyword/${kind}`,
      message: `found a value assigned to "${name.slice(0, 60)}"`,
      start: v.start,
      end: v.end,
    });
  }
  return hits;
}
