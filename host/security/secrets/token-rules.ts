import { hasBase62Crc32 } from './checksums.ts';
import { charClasses } from './entropy.ts';

/**
 * Provider credentials recognisable by their own shape: a documented prefix, length and alphabet, and the
 * checksum where the provider has one. One row per format; every row's pattern runs on every text (with
 * literal-led patterns that is cheaper than checking first whether a literal occurs at all).
 *
 * A pattern's capture groups, when it has any, span the secret (the rest is context such as
 * `AccountKey=`); otherwise the whole match is. Patterns start with a literal where they can (V8 then
 * skips ahead to it); a format whose literal sits in the middle (`:` in a Telegram token) starts there,
 * checks what follows with a lookahead first (cheap, and usually fails), then captures the part before
 * it in a lookbehind.
 */
export interface TokenRule {
  rule: string;
  /** Names the credential in findings: "found <what>". */
  what: string;
  /** Global; bounded quantifiers only, so a match costs at most its own length. */
  pattern: RegExp;
  /** Extra checks on the secret (checksum, decodable header) after the pattern matched. */
  validate?: (secret: string) => boolean;
}

// Boundaries: a token does not continue an identifier or a longer run of its own alphabet.
const B = '(?<![A-Za-z0-9_-])';
const E = '(?![A-Za-z0-9_-])';
const Bx = '(?<![A-Za-z0-9])';
const Ex = '(?![A-Za-z0-9])';
/** `d`: match indices, so a secret spanning several groups gets its exact range. */
const re = (source: string, flags = 'g') => new RegExp(source, `${flags}d`);

const mixedAlnum = (s: string) => {
  const c = charClasses(s);
  return c.digit && (c.lower || c.upper);
};

function base64urlJson(segment: string): unknown {
  try {
    return JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

/** A JWT's header and payload decode to JSON objects and the header names an algorithm or a type. */
function isJwt(token: string): boolean {
  const [header, payload, signature] = token.split('.');
  const h = base64urlJson(header ?? '');
  if (typeof h !== 'object' || h === null || !('alg' in h || 'typ' in h)) return false;
  const p = base64urlJson(payload ?? '');
  return typeof p === 'object' && p !== null && (signature ?? '').length >= 16;
}

/** Discord bot tokens start with the bot's numeric id, base64-encoded. */
function discordIdPart(token: string): boolean {
  const id = Buffer.from(token.split('.')[0] ?? '', 'base64url').toString('latin1');
  return /^\d{17,20}$/.test(id);
}

export const TOKEN_RULES: readonly TokenRule[] = [
  // AWS: access key ids are 20 characters with a documented 4-character prefix (AKIA long-term, ASIA
  // temporary, ABIA/ACCA service-specific). The secret key has no prefix; it is found next to its name.
  {
    rule: 'aws/access-key-id',
    what: 'an AWS access key id',
    pattern: re(`${Bx}((?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16})${Ex}`),
  },
  {
    rule: 'aws/secret-access-key',
    what: 'an AWS secret access key',
    pattern: re(
      `(?:aws)?_?secret_?(?:access)?_?key["']?\\\\?["']?\\s*(?::|=|=>|:=)\\s*\\\\?["']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])`,
      'gi',
    ),
    validate: mixedAlnum,
  },
  {
    rule: 'azure/storage-account-key',
    what: 'an Azure storage account key',
    pattern: re(`AccountKey\\s*=\\s*([A-Za-z0-9+/]{86}==)`, 'gi'),
  },
  {
    rule: 'azure/sas-signature',
    what: 'an Azure shared access signature',
    pattern: re(`[?&;]sig=([A-Za-z0-9%+/]{40,100}(?:%3D|=){0,2})`, 'g'),
    validate: (s) => !s.includes('...'),
  },
  {
    // Entra ID (Azure AD) client secrets: 3 characters, a digit, `Q~`, then 31-34 more.
    rule: 'azure/client-secret',
    what: 'an Azure AD client secret',
    pattern: re(`(?<![A-Za-z0-9_~.-])([A-Za-z0-9_~.]{3}\\dQ~[A-Za-z0-9_~.-]{31,34})(?![A-Za-z0-9_~.-])`),
  },
  {
    rule: 'github/pat-classic',
    what: 'a GitHub token (checksum valid)',
    pattern: re(`${B}(gh[pousr]_[A-Za-z0-9]{36})${E}`),
    validate: (s) => hasBase62Crc32(s.slice(4)),
  },
  {
    rule: 'github/pat-fine-grained',
    what: 'a GitHub fine-grained personal access token',
    pattern: re(`${B}(github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})${E}`),
  },
  {
    // GitLab: every token type has its own prefix (personal, deploy, runner, pipeline trigger, OAuth
    // application, feed, incoming mail, agent, SCIM, CI build, feature flags); routable tokens append
    // `.01.<suffix>`. Runner registration tokens start with GR1348941.
    rule: 'gitlab/token',
    what: 'a GitLab token',
    pattern: re(
      `${B}((?:gl(?:pat|dt|rt|ptt|soat|cbt|oas|ffct|imt|agent|ft|wt)-|GR1348941)[A-Za-z0-9_-]{20,64}(?:\\.[0-9]{2}\\.[a-z0-9]{9})?)${E}`,
    ),
    validate: mixedAlnum,
  },
  {
    rule: 'npm/token',
    what: 'an npm access token (checksum valid)',
    pattern: re(`${B}(npm_[A-Za-z0-9]{36})${E}`),
    validate: (s) => hasBase62Crc32(s.slice(4)),
  },
  {
    rule: 'npm/auth-token',
    what: 'an npm registry auth token (.npmrc)',
    pattern: re(`:_(?:authToken|auth|password)\\s*=\\s*["']?([^\\s"'$]{16,512})`),
  },
  {
    rule: 'slack/token',
    what: 'a Slack token',
    pattern: re(`${Bx}((?:xox[abposre]|xoxe\\.xox[bp]|xapp)-[0-9]{1,16}-[0-9A-Za-z-]{16,256})${Ex}`),
  },
  {
    rule: 'slack/webhook-url',
    what: 'a Slack webhook URL',
    pattern: re(`hooks\\.slack\\.com/(?:services|workflows|triggers)/([A-Za-z0-9_/-]{20,120})`),
    validate: mixedAlnum,
  },
  {
    rule: 'discord/bot-token',
    what: 'a Discord bot token',
    pattern: re(
      `\\.(?=[A-Za-z0-9_-]{6}\\.[A-Za-z0-9_-]{27,38}${E})(?<=${B}([MNO][A-Za-z0-9_-]{23,25})\\.)([A-Za-z0-9_-]{6}\\.[A-Za-z0-9_-]{27,38})`,
    ),
    validate: discordIdPart,
  },
  {
    rule: 'discord/webhook-url',
    what: 'a Discord webhook URL',
    pattern: re(`discord(?:app)?\\.com/api/webhooks/[0-9]{17,20}/([A-Za-z0-9_-]{60,72})`),
  },
  {
    rule: 'telegram/bot-token',
    what: 'a Telegram bot token',
    pattern: re(`:(?=[A-Za-z0-9_-]{35}${E})(?<=(?:(?<=/bot)|${Bx})([0-9]{8,10}):)([A-Za-z0-9_-]{35})`),
    validate: (s) => mixedAlnum(s.slice(s.indexOf(':') + 1)),
  },
  {
    rule: 'stripe/secret-key',
    what: 'a Stripe secret or restricted key',
    pattern: re(`${B}((?:sk|rk)_(?:live|test)_[A-Za-z0-9]{24,247})${E}`),
  },
  {
    rule: 'stripe/webhook-secret',
    what: 'a Stripe webhook signing secret',
    pattern: re(`${B}(whsec_[A-Za-z0-9+/]{32,88})`),
  },
  {
    rule: 'openai/api-key',
    what: 'an OpenAI API key',
    pattern: re(`${B}(sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{40,250})${E}`),
  },
  {
    // Keys of every generation carry "T3BlbkFJ" (base64 of "OpenAI") mid-way: the pattern starts there.
    rule: 'openai/api-key',
    what: 'an OpenAI API key',
    pattern: re(`T3BlbkFJ(?<=${B}(sk-[A-Za-z0-9_-]{0,80}T3BlbkFJ))([A-Za-z0-9_-]{20,80})${E}`),
  },
  {
    rule: 'anthropic/api-key',
    what: 'an Anthropic API key',
    pattern: re(`${B}(sk-ant-(?:api|admin|oat|sid)[0-9]{2}-[A-Za-z0-9_-]{32,120})${E}`),
  },
  {
    rule: 'google/api-key',
    what: 'a Google API key',
    pattern: re(`${B}(AIza[0-9A-Za-z_-]{35})${E}`),
  },
  {
    rule: 'google/oauth-client-secret',
    what: 'a Google OAuth client secret',
    pattern: re(`${B}(GOCSPX-[A-Za-z0-9_-]{28})${E}`),
  },
  {
    rule: 'google/oauth-access-token',
    what: 'a Google OAuth access token',
    pattern: re(`${B}(ya29\\.[0-9A-Za-z_-]{30,1024})${E}`),
  },
  {
    // The private key itself is a PEM block (private-key/block); the key id marks the file as one.
    rule: 'gcp/service-account-key',
    what: 'a GCP service account key file',
    pattern: re(`"private_key_id"\\s*:\\s*"([a-f0-9]{40})"`),
  },
  {
    rule: 'huggingface/token',
    what: 'a Hugging Face token',
    pattern: re(`${B}((?:hf_|api_org_)[A-Za-z]{34})${E}`),
  },
  {
    rule: 'digitalocean/token',
    what: 'a DigitalOcean token',
    pattern: re(`${B}(do[opr]_v1_[a-f0-9]{64})${E}`),
  },
  {
    rule: 'mailgun/api-key',
    what: 'a Mailgun API key',
    pattern: re(`${B}(key-[a-z0-9]{32})${E}`),
    validate: mixedAlnum,
  },
  {
    rule: 'mailgun/api-key',
    what: 'a Mailgun API key',
    pattern: re(`-(?=[a-f0-9]{8}-[a-f0-9]{8}${E})(?<=${B}([a-f0-9]{32})-)([a-f0-9]{8}-[a-f0-9]{8})`),
    validate: mixedAlnum,
  },
  {
    rule: 'mailchimp/api-key',
    what: 'a Mailchimp API key',
    pattern: re(`-us(?=[0-9]{1,2}${Ex})(?<=${Bx}([a-f0-9]{32})-us)([0-9]{1,2})`),
  },
  {
    rule: 'sendgrid/api-key',
    what: 'a SendGrid API key',
    pattern: re(`${B}(SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43})${E}`),
  },
  {
    rule: 'twilio/key',
    what: 'a Twilio account SID or API key SID',
    pattern: re(`${Bx}((?:AC|SK)[a-f0-9]{32})${Ex}`),
    validate: (s) => mixedAlnum(s.slice(2)),
  },
  {
    rule: 'square/token',
    what: 'a Square access token or OAuth secret',
    pattern: re(`${B}(sq0atp-[0-9A-Za-z_-]{22}|sq0csp-[0-9A-Za-z_-]{43}|EAAA[A-Za-z0-9_-]{60})${E}`),
  },
  {
    rule: 'shopify/token',
    what: 'a Shopify access token or shared secret',
    pattern: re(`${B}(shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})${E}`),
  },
  {
    rule: 'pypi/token',
    what: 'a PyPI upload token',
    pattern: re(`${B}(pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,})`),
  },
  {
    rule: 'jwt/token',
    what: 'a JSON Web Token',
    pattern: re(`${B}(ey[A-Za-z0-9_-]{10,}\\.ey[A-Za-z0-9_-]{10,}\\.[A-Za-z0-9_-]{16,})`),
    validate: isJwt,
  },
  {
    rule: 'linear/api-key',
    what: 'a Linear API key',
    pattern: re(`${B}(lin_api_[A-Za-z0-9]{40}|lin_oauth_[a-f0-9]{64})${E}`),
  },
  {
    rule: 'notion/token',
    what: 'a Notion integration token',
    pattern: re(`${B}(secret_[A-Za-z0-9]{43}|ntn_[0-9]{11}[A-Za-z0-9]{35})${E}`),
    validate: mixedAlnum,
  },
  {
    rule: 'doppler/token',
    what: 'a Doppler token',
    pattern: re(`${B}(dp\\.(?:pt|st|sa|ct|scim|audit)\\.(?:[a-z0-9_-]{2,35}\\.)?[A-Za-z0-9]{40,44})${E}`),
  },
  {
    rule: 'vault/token',
    what: 'a HashiCorp Vault token',
    pattern: re(`${B}(hv[sbr]\\.[A-Za-z0-9_-]{24,250})${E}`),
    validate: mixedAlnum,
  },
  {
    rule: 'grafana/token',
    what: 'a Grafana token',
    pattern: re(
      `${B}(glc_[A-Za-z0-9+/]{32,400}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|eyJrIjoi[A-Za-z0-9+/]{50,200}={0,2})`,
    ),
  },
  {
    rule: 'ibm/cloud-iam-key',
    what: 'an IBM Cloud IAM API key',
    pattern: re(
      `(?:ibm|iam)[\\w.-]{0,30}(?:api[_-]?key|key|password|pwd|pass)["']?\\\\?["']?\\s*(?::|=|=>|:=)\\s*\\\\?["']?([A-Za-z0-9_-]{44})(?![A-Za-z0-9_-])`,
      'gi',
    ),
    validate: mixedAlnum,
  },
  {
    rule: 'ibm/cos-hmac-secret',
    what: 'an IBM Cloud Object Storage HMAC secret',
    pattern: re(
      `secret_access_key["']?\\\\?["']?\\s*(?::|=|=>)\\s*\\\\?["']?([a-f0-9]{48})(?![a-f0-9])`,
      'gi',
    ),
  },
  {
    rule: 'softlayer/api-key',
    what: 'a SoftLayer API key',
    pattern: re(
      `(?:softlayer|sl)[_-]?(?:api)?[_-]?key["']?\\\\?["']?\\s*(?::|=|=>|:=)\\s*\\\\?["']?([a-z0-9]{64})(?![a-z0-9])`,
      'gi',
    ),
  },
  {
    rule: 'cloudant/credential',
    what: 'a Cloudant password or API key',
    pattern: re(
      `cloudant[\\w.-]{0,20}(?:password|pwd|pass|api[_-]?key|key)["']?\\\\?["']?\\s*(?::|=|=>|:=)\\s*\\\\?["']?([0-9a-f]{64}|[a-z]{24})(?![A-Za-z0-9])`,
      'gi',
    ),
  },
  {
    rule: 'artifactory/token',
    what: 'a JFrog Artifactory API key or access token',
    pattern: re(`${Bx}(AKCp[A-Za-z0-9]{69}|cmVmdGtuOjAxOj[A-Za-z0-9]{40,80})${Ex}`),
  },
  {
    rule: 'onepassword/service-account-token',
    what: 'a 1Password service account token',
    pattern: re(`${B}(ops_eyJ[A-Za-z0-9+/_-]{100,1500}={0,2})`),
  },
  {
    rule: 'atlassian/api-token',
    what: 'an Atlassian API token',
    pattern: re(`${B}(ATATT3[A-Za-z0-9_=-]{150,250})${E}`),
  },
  {
    rule: 'postman/api-key',
    what: 'a Postman API key',
    pattern: re(`${B}(PMAK-[a-f0-9]{24}-[a-f0-9]{34})${E}`),
  },
  {
    rule: 'sentry/token',
    what: 'a Sentry auth token',
    pattern: re(`${B}(sntrys_eyJ[A-Za-z0-9+/=_-]{50,400}|sntryu_[a-f0-9]{64})`),
  },
  {
    rule: 'databricks/token',
    what: 'a Databricks access token',
    pattern: re(`${Bx}(dapi[a-f0-9]{32}(?:-[0-9])?)${Ex}`),
    validate: mixedAlnum,
  },
  {
    rule: 'age/secret-key',
    what: 'an age secret key',
    pattern: re(`(AGE-SECRET-KEY-1[0-9A-Z]{58})`),
  },
  {
    rule: 'supabase/token',
    what: 'a Supabase access token',
    pattern: re(`${B}(sbp_[a-f0-9]{40})${E}`),
  },
  {
    rule: 'pulumi/token',
    what: 'a Pulumi access token',
    pattern: re(`${B}(pul-[a-f0-9]{40})${E}`),
  },
  {
    rule: 'groq/api-key',
    what: 'a Groq API key',
    pattern: re(`${B}(gsk_[A-Za-z0-9]{52})${E}`),
  },
  {
    rule: 'xai/api-key',
    what: 'an xAI API key',
    pattern: re(`${B}(xai-[A-Za-z0-9]{80})${E}`),
  },
  {
    rule: 'replicate/token',
    what: 'a Replicate API token',
    pattern: re(`${B}(r8_[A-Za-z0-9]{37})${E}`),
  },
  {
    rule: 'perplexity/api-key',
    what: 'a Perplexity API key',
    pattern: re(`${B}(pplx-[A-Za-z0-9]{48})${E}`),
  },
  {
    rule: 'newrelic/api-key',
    what: 'a New Relic user API key',
    pattern: re(`${B}(NRAK-[A-Z0-9]{27})${E}`),
  },
  {
    rule: 'terraform/token',
    what: 'a Terraform Cloud token',
    pattern: re(`\\.atlasv1\\.(?<=${Bx}([A-Za-z0-9]{14})\\.atlasv1\\.)([A-Za-z0-9_=-]{60,70})${E}`),
  },
  {
    rule: 'airtable/token',
    what: 'an Airtable personal access token',
    pattern: re(`${Bx}(pat[A-Za-z0-9]{14}\\.[a-f0-9]{64})${Ex}`),
  },
  {
    rule: 'figma/token',
    what: 'a Figma personal access token',
    pattern: re(`${B}(figd_[A-Za-z0-9_-]{40,})`),
  },
];
