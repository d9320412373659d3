/**
 * Values that sit where a secret would but are not one: references to where the secret really lives,
 * placeholders in documentation and templates, redacted values, and keys vendors publish in their own
 * documentation. Detectors call these before reporting, so an example or a template is never a finding.
 */

/** Keys and tokens providers print in their documentation; they never authenticate anyone. */
const VENDOR_EXAMPLES = new Set([
  'AKIAIOSFODNN7EXAMPLE',
  'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  'sk_test_4eC39HqLyjWDarjtT1zdp7dc',
  'sk_test_BQokikJOvBiI2HlWgH4olfQ2',
  'rk_test_4eC39HqLyjWDarjtT1zdp7dc',
  'AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe',
  // jwt.io's default token.
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c',
  // The Azure storage emulator's published account key (devstoreaccount1).
  'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==',
  'key-3ax6xnjp29jd6fds4gc373sgvjxteol0',
  '123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11',
]);

export const isVendorExample = (value: string) => VENDOR_EXAMPLES.has(value);

/** Words that stand in for a value: `changeme`, `your-api-key`, `<token>`, `example`, `REDACTED`. */
const PLACEHOLDER_WORDS =
  /^(?:changeme|change[_-]?me|change[_-]?this|replace[_-]?me|secret|secrets|password|passwd|pass|pwd|token|apikey|api[_-]?key|none|null|nil|undefined|true|false|empty|string|str|text|number|integer|boolean|bool|required|optional|hidden|masked|redacted|removed|omitted|sensitive|example|sample|dummy|placeholder|default|test|testing|foo|bar|baz|foobar|qwerty|letmein|admin|root|user|username|guest|value|my[_-]?secret|my[_-]?password|mysecret|mypassword|secret[_-]?key|your[_-]?\w*|\w*[_-]here|insert[_-]?\w*|enter[_-]?\w*|todo|tbd|n\/a|na|xxx|\*+)$/i;

/** Fragments that make a value a placeholder wherever they appear in it. */
const PLACEHOLDER_FRAGMENT =
  /x{4,}|X{4,}|\*{3,}|•{2,}|…|\.{3}|<[^<>]{1,60}>|\{\{[^}]{0,60}\}\}|\[(?:redacted|hidden|masked|secret|removed|filtered)\]|redacted|placeholder|example|dummy|your[_-]?(?:api|secret|token|key|password|own)|(?:insert|replace|enter|put)[_-]?(?:your|the|a|here)|changeme|not[_-]?a[_-]?real|fake[_-]?(?:key|token|secret|password)/i;

/**
 * References to a secret kept elsewhere: `${VAR}`, `$VAR`, `%VAR%`, `process.env.X`, `os.environ[...]`,
 * `env("X")`, `secrets.X` (GitHub Actions), `{{ .Values.x }}`, Vault/SSM/Key Vault URIs, `!Ref`.
 */
const REFERENCE =
  /^(?:\$\{[^}]*\}?|\$\(|\$[A-Za-z_][A-Za-z0-9_]*$|%[A-Za-z_][A-Za-z0-9_]*%$|!(?:Ref|Sub|GetAtt|vault)\b|(?:process\.env|import\.meta\.env|os\.environ|os\.getenv|getenv|System\.getenv|Environment\.GetEnvironmentVariable|ENV\[|env\(|env\.|secrets\.|vars\.|settings\.|config\.|self\.|this\.|ctx\.|context\.)|(?:vault|ssm|secretsmanager|keyvault|op|gcpsm|awssm|sm|doppler|akv|azkv):\/\/|arn:aws:)/;

/** Crypt-style password hashes (`$2b$…`, `$argon2id$…`, `$6$…`): digests of a password, not the password. */
const PASSWORD_HASH = /^\$(?:2[abxy]?|argon2(?:id|i|d)|[156]|pbkdf2[\w-]*|scrypt|sha(?:256|512)?)\$/;

export function isPlaceholder(value: string): boolean {
  return PLACEHOLDER_WORDS.test(value) || PLACEHOLDER_FRAGMENT.test(value);
}

export function isReference(value: string): boolean {
  return REFERENCE.test(value) || PASSWORD_HASH.test(value);
}

/** A value that is a placeholder, a reference, redacted, or a vendor's documented example. */
export function isNotASecret(value: string): boolean {
  return isVendorExample(value) || isReference(value) || isPlaceholder(value);
}
