import { charClasses } from './entropy.ts';
import type { Hit } from './finding.ts';
import { isNotASecret } from './placeholders.ts';

/**
 * Credentials written into a URL (`scheme://user:password@host`, database connection strings, `redis://:
 * password@host`), given to curl (`-u user:password`, `--user=…`), or sent as an HTTP Basic
 * `Authorization` header. The finding covers the password only.
 */

const DATABASE_SCHEMES =
  /^(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|redis|rediss|amqps?|mssql|sqlserver|jdbc:[a-z]+|clickhouse|cockroachdb|couchdb|neo4j(?:\+s)?|bolt|cassandra|oracle|db2|snowflake|memcached|nats|mqtt|kafka)$/i;

// Starts at the literal `://` (fast to find); the scheme is read backwards from there.
const URL_WITH_CREDENTIALS = /:\/\/([^\s:/?#@'"<>`]{0,128}):([^\s/?#@'"<>`]{1,256})@(?=[A-Za-z0-9[])/g;
const SCHEME_BEFORE = /(?:jdbc:)?[A-Za-z][A-Za-z0-9+.-]{0,24}$/;

const CURL_USER =
  /(?:^|[\s;|&(])(?:-u|--user|--proxy-user)(?:\s+|=)?(["']?)([^\s:"'@]{0,128}):([^\s"']{1,256})\1/g;

const BASIC_HEADER = /\bBasic\s+([A-Za-z0-9+/]{8,400}={0,2})(?![A-Za-z0-9+/=])/g;

/** Defaults and templates that are not a real password (`postgres:postgres`, `:password`, `{pw}`). */
function isRealPassword(user: string, password: string): boolean {
  if (password.length < 3 || password === user) return false;
  if (isNotASecret(password) || isNotASecret(decodeSafely(password))) return false;
  if (/^\{[^}]*\}$|^%\(?\w*\)?s$|^:[A-Za-z_]\w*$|^\$/.test(password)) return false;
  return true;
}

function decodeSafely(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

export function findUrlCredentials(text: string): Hit[] {
  const hits: Hit[] = [];
  if (text.includes('://')) {
    for (const m of text.matchAll(URL_WITH_CREDENTIALS)) {
      const scheme = SCHEME_BEFORE.exec(text.slice(Math.max(0, m.index - 30), m.index))?.[0] ?? 'URL';
      const user = m[1] as string;
      const password = m[2] as string;
      if (!isRealPassword(user, password)) continue;
      const start = m.index + m[0].length - 1 - password.length;
      const database = DATABASE_SCHEMES.test(scheme);
      hits.push({
        rule: database ? 'database/connection-string' : 'url/credentials',
        message: database
          ? `found a password in a ${scheme} connection string`
          : `found a password in a ${scheme} URL`,
        start,
        end: start + password.length,
      });
    }
  }
  if (text.includes('-u') || text.includes('--user') || text.includes('--proxy-user')) {
    for (const m of text.matchAll(CURL_USER)) {
      // `-u` means "user" to curl; to docker, sort or git it means something else.
      // The command's line, at most 500 characters back (a bound, so that many flags stay linear).
      const from = Math.max(0, m.index - 500);
      const before = text.slice(from, m.index + m[0].length);
      const line = before.slice(before.lastIndexOf('\n') + 1);
      if (!/\bcurl\b|--user\b|--proxy-user\b/.test(line)) continue;
      const user = m[2] as string;
      const password = m[3] as string;
      if (!isRealPassword(user, password)) continue;
      const end = m.index + m[0].length - (m[1] as string).length;
      hits.push({
        rule: 'basic-auth/curl-user',
        message: 'found a password given to curl with -u/--user',
        start: end - password.length,
        end,
      });
    }
  }
  if (text.includes('Basic')) {
    for (const m of text.matchAll(BASIC_HEADER)) {
      const decoded = Buffer.from(m[1] as string, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon < 1 || !/^[\x20-\x7e]+$/.test(decoded)) continue;
      const password = decoded.slice(colon + 1);
      if (!isRealPassword(decoded.slice(0, colon), password)) continue;
      if (!charClasses(password).digit && password.length < 8) continue;
      const start = m.index + m[0].length - (m[1] as string).length;
      hits.push({
        rule: 'basic-auth/header',
        message: 'found HTTP Basic credentials (user:password in base64)',
        start,
        end: m.index + m[0].length,
      });
    }
  }
  return hits;
}
