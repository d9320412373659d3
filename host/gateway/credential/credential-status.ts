import { request, type Dispatcher } from 'undici';
import { errorMessage } from '../../errors/error-message.ts';
import {
  credentialHeader,
  credentialUpstream,
  type CredentialConfig,
  type CredentialsConfig,
} from './credential-config.ts';
import { redactionsFor, redactText } from './redacting-stream.ts';
import { systemClock, type Clock } from '../../time/clock.ts';
import { timeoutSignal } from '../../time/clock-timers.ts';

/** What `carapace status` says of one credential: never its value, only whether the host has one. */
export interface CredentialStatus {
  name: string;
  kind: 'http' | 'git';
  upstream: string;
  value: 'set' | 'missing';
  groups: string[];
  /** The last request through it since the host started (status 0: the upstream could not be reached). */
  last: { at: string; status: number } | null;
}

/** The upstream as shown: origin and path, nothing else of the URL. */
export function shownUpstream(c: CredentialConfig): string {
  const url = credentialUpstream(c);
  return `${url.origin}${url.pathname}`;
}

/** Remembers each credential's last answer, so `status` can say whether it is reachable in use. */
export function createCredentialStatusBook(clock: Pick<Clock, 'now'>) {
  const last = new Map<string, { at: string; status: number }>();
  return {
    note(name: string, status: number): void {
      last.set(name, { at: new Date(clock.now()).toISOString(), status });
    },
    status(
      credentials: CredentialsConfig,
      groups: Record<string, { credentials?: string[] | undefined }>,
      hasValue: (envName: string) => boolean,
    ): CredentialStatus[] {
      return Object.entries(credentials).map(([name, c]) => ({
        name,
        kind: c.kind,
        upstream: shownUpstream(c),
        value: hasValue(c.value_env) ? 'set' : 'missing',
        groups: Object.entries(groups)
          .filter(([, g]) => (g.credentials ?? []).includes(name))
          .map(([id]) => id),
        last: last.get(name) ?? null,
      }));
    },
  };
}

/**
 * Whether the upstream answers with the credential, for `carapace doctor`: a git remote's upload-pack
 * refs (what a clone asks first), or an http credential's base URL. Says the status, never the value.
 */
export async function probeCredential(
  c: CredentialConfig,
  value: string | undefined,
  dispatcher?: Dispatcher,
  clock: Clock = systemClock,
): Promise<{ ok: boolean; text: string }> {
  if (value === undefined || value === '') return { ok: false, text: `no value (${c.value_env} is not set)` };
  const header = credentialHeader(c);
  const rendered = header.render(value);
  const upstream = shownUpstream(c);
  const url =
    c.kind === 'git' ? `${upstream.replace(/\/$/, '')}/info/refs?service=git-upload-pack` : upstream;
  try {
    const answer = await request(url, {
      headers: { [header.name]: rendered, 'user-agent': 'carapace-doctor' },
      signal: timeoutSignal(clock, 10_000),
      ...(dispatcher ? { dispatcher } : {}),
    });
    await answer.body.dump();
    const refused = answer.statusCode === 401 || answer.statusCode === 403;
    // An http API's base URL may well answer 404: it answered, with the value, and did not refuse it.
    return {
      ok: !refused && answer.statusCode < 500 && (c.kind === 'http' || answer.statusCode === 200),
      text: refused
        ? `${upstream} refused the value (HTTP ${answer.statusCode})`
        : `${upstream} answered HTTP ${answer.statusCode}`,
    };
  } catch (error) {
    return {
      ok: false,
      text: `${upstream} unreachable: ${redactText(errorMessage(error), redactionsFor([value, rendered]))}`,
    };
  }
}
